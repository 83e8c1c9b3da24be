# The worker container's entry point: `locust --worker "$@"`, restarted in the container whenever
# it exits.
#
# A Locust worker exits when its master does (the master sends "quit" at the end of a headless
# run), when it hears no master for 60 s, or after 5 minutes without finding one. A maximum-rate
# search runs one Locust master per step, so workers must outlive their master. Leaving the restart
# to Kubernetes would not do: a pod whose container keeps exiting is put in CrashLoopBackOff, with
# restart delays growing to 5 minutes. Here a restart takes 1 s after a run of 10 s or more; quick
# failures in a row (a broken locustfile, say) back off 1, 2, 4 ... up to 30 s, so a mistake does not
# spin a core, and its message stays readable in `kubectl logs`.
#
# SIGTERM (pod deletion, scale down) goes to locust, which tells its master it is leaving; then the
# loop ends. POSIX sh: run by the image's /bin/sh (dash) and by tests/integration/test_kubernetes.py.
set -u

min_delay=1
max_delay=30
steady_s=10  # a run at least this long was a real run, not a failure: the back-off starts over
delay=$min_delay
child=

stop() {
    trap - TERM INT
    if [ -n "$child" ]; then
        kill -TERM "$child" 2>/dev/null
        wait "$child"
    fi
    exit 0
}
trap stop TERM INT

while :; do
    started=$(date +%s)
    locust --worker "$@" &
    child=$!
    wait "$child"
    code=$?
    child=
    if [ $(($(date +%s) - started)) -ge "$steady_s" ]; then
        delay=$min_delay
    fi
    echo "worker-loop: locust exited with status $code; starting it again in ${delay}s" >&2
    sleep "$delay" &
    child=$!
    wait "$child"
    child=
    delay=$((delay * 2 > max_delay ? max_delay : delay * 2))
done
