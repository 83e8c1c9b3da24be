# The master Jobs' entry point: run the command ("$@"), then keep the pod, and with it /reports, for
# KEEP_REPORTS_SECONDS so that `kubectl cp POD:/reports ./reports` can fetch the report: the files of
# a pod whose containers have exited cannot be copied. Exits with the command's status, so the Job
# still says whether the run passed. SIGTERM goes to the command; it then exits without waiting.
set -u

child=
stopping=0

stop() {
    stopping=1
    if [ -n "$child" ]; then
        kill -TERM "$child" 2>/dev/null
    fi
}
trap stop TERM INT

"$@" &
child=$!
wait "$child"
code=$?
# A trapped signal interrupts `wait`: wait again for the command's own status.
while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    code=$?
done
child=

keep=${KEEP_REPORTS_SECONDS:-0}
if [ "$stopping" -eq 0 ] && [ "$keep" -gt 0 ]; then
    echo "keep-reports: exit status $code; /reports kept ${keep}s: kubectl cp ${HOSTNAME:-POD}:/reports ./reports" >&2
    sleep "$keep" &
    child=$!
    wait "$child"
fi
exit "$code"
