// goref: make bench's compiled reference (issue 37): one go-stomp producer and one consumer, N messages, one JSON line.
//
//	goref -host 127.0.0.1:61613 -queue /queue/x -messages 100000 -size 1024 [-rate 2000] [-receipts]
//
// The consumer subscribes (ack auto) and its SUBSCRIBE is known to be processed (a BEGIN/ABORT with a
// RECEIPT on the same connection, after it) before the producer sends. Each body starts with the send
// time (ns on this process's monotonic clock) so the consumer records send-to-receive latency, µs, in an
// HdrHistogram (1 µs to 60 s, 3 significant digits). -rate 0 sends all out; -rate R sends message i at
// its due time start+i/R, never earlier. -receipts asks a RECEIPT for every SEND and waits for it (one
// in flight). The measured phase runs from just before the first send to the Nth receive: wall time and
// this process's CPU (user+sys, getrusage(RUSAGE_SELF)). It ends after N received or -timeout seconds,
// prints one JSON line on stdout either way, and exits 1 unless all N arrived (2 on bad flags).
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
)

// Latency bounds of the histogram, µs, and its precision.
const (
	lowestMicros  = 1
	highestMicros = 60_000_000
	sigFigs       = 3
	stampBytes    = 8
)

type options struct {
	host, queue, login, passcode string
	messages, size               int
	rate, timeout                float64
	receipts                     bool
}

// result is the one line goref prints; benchmarks/goref.py reads it.
type result struct {
	Sent      int     `json:"sent"`
	Received  int     `json:"received"`
	WallS     float64 `json:"wall_s"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	CPUS      float64 `json:"cpu_s"`
	SysS      float64 `json:"sys_s"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
	LateMaxMs float64 `json:"late_max_ms"` // paced: the latest a send went out after its due time
	Error     string  `json:"error,omitempty"`
}

// base is the clock both ends read: one process, so a monotonic offset from it is comparable.
var base = time.Now()

func stamp() int64 { return int64(time.Since(base)) }

func parseOptions(args []string) (options, error) {
	var o options
	flags := flag.NewFlagSet("goref", flag.ContinueOnError)
	flags.StringVar(&o.host, "host", "127.0.0.1:61613", "the broker, HOST:PORT (a stomp:// prefix is dropped)")
	flags.StringVar(&o.queue, "queue", "", "the destination, e.g. /queue/goref.check.1 (required)")
	flags.IntVar(&o.messages, "messages", 100_000, "messages to send and receive")
	flags.IntVar(&o.size, "size", 1024, "body bytes (at least 8: the send time)")
	flags.Float64Var(&o.rate, "rate", 0, "msg/s on a fixed schedule; 0 = all out")
	flags.BoolVar(&o.receipts, "receipts", false, "a RECEIPT per SEND, awaited (one in flight)")
	flags.StringVar(&o.login, "login", "", "STOMP login (optional)")
	flags.StringVar(&o.passcode, "passcode", "", "STOMP passcode (optional)")
	flags.Float64Var(&o.timeout, "timeout", 120, "seconds before giving up on the measured phase")
	if err := flags.Parse(args); err != nil {
		return o, err
	}
	o.host = strings.TrimSuffix(strings.TrimPrefix(o.host, "stomp://"), "/")
	switch {
	case o.queue == "":
		return o, errors.New("-queue is required")
	case o.messages < 1:
		return o, errors.New("-messages must be at least 1")
	case o.size < stampBytes:
		return o, fmt.Errorf("-size must be at least %d (the body carries the send time)", stampBytes)
	case o.rate < 0 || o.timeout <= 0:
		return o, errors.New("-rate must be >= 0 and -timeout > 0")
	}
	return o, nil
}

// dial opens one STOMP 1.2 connection without heart-beats (as the other generators of make bench).
// go-stomp dials with net.Dial, and Go sets TCP_NODELAY on every TCP connection it opens by default,
// so each SEND leaves at once, as mqusers' and (e)'s do.
func dial(o options) (*stomp.Conn, error) {
	opts := []func(*stomp.Conn) error{
		stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.AcceptVersion(stomp.V12),
		stomp.ConnOpt.DisconnectReceiptTimeout(5 * time.Second),
	}
	if o.login != "" || o.passcode != "" {
		opts = append(opts, stomp.ConnOpt.Login(o.login, o.passcode))
	}
	return stomp.Dial("tcp", o.host, opts...)
}

func cpuSeconds() (total, sys float64) {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0, 0
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime) + seconds(usage.Stime), seconds(usage.Stime)
}

// consume records each message's latency until n arrived or stop closes; the count goes to done.
func consume(sub *stomp.Subscription, n int, hist *hdrhistogram.Histogram, stop <-chan struct{}, done chan<- int, failed chan<- error) {
	received := 0
	defer func() { done <- received }()
	for received < n {
		var msg *stomp.Message
		var ok bool
		select {
		case msg, ok = <-sub.C:
		case <-stop:
			return
		}
		if !ok {
			failed <- errors.New("consumer: the subscription ended")
			return
		}
		if msg.Err != nil {
			failed <- fmt.Errorf("consumer: %w", msg.Err)
			return
		}
		now := stamp()
		if len(msg.Body) < stampBytes {
			failed <- fmt.Errorf("consumer: a %d-byte body carries no send time", len(msg.Body))
			return
		}
		micros := (now - int64(binary.LittleEndian.Uint64(msg.Body))) / 1000
		_ = hist.RecordValue(min(max(micros, lowestMicros), highestMicros))
		received++
	}
}

// sendCount is what the producer did: messages sent and, paced, the latest a send left after its due time.
type sendCount struct {
	n       int
	lateMax time.Duration
}

// produce sends n bodies, each stamped just before its SEND; paced, each at its due time or later.
func produce(conn *stomp.Conn, o options, start time.Time, out chan<- sendCount) error {
	var lateMax time.Duration
	template := make([]byte, o.size)
	for i := range template {
		template[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[i%36]
	}
	var sendOpts []func(*frame.Frame) error
	if o.receipts {
		sendOpts = append(sendOpts, stomp.SendOpt.Receipt)
	}
	for i := range o.messages {
		if o.rate > 0 {
			due := start.Add(time.Duration(float64(i) / o.rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait) // sleeps at least wait: never early
			}
			lateMax = max(lateMax, time.Since(due))
		}
		// go-stomp queues the body to its writer goroutine without copying it: one buffer per message.
		body := make([]byte, o.size)
		copy(body, template)
		binary.LittleEndian.PutUint64(body, uint64(stamp()))
		if err := conn.Send(o.queue, "", body, sendOpts...); err != nil {
			out <- sendCount{i, lateMax}
			return fmt.Errorf("producer: SEND %d: %w", i, err)
		}
	}
	out <- sendCount{o.messages, lateMax}
	return nil
}

func run(o options) (result, error) {
	var res result
	consumer, err := dial(o)
	if err != nil {
		return res, fmt.Errorf("consumer: connect: %w", err)
	}
	defer consumer.Disconnect()
	sub, err := consumer.Subscribe(o.queue, stomp.AckAuto)
	if err != nil {
		return res, fmt.Errorf("consumer: SUBSCRIBE: %w", err)
	}
	// go-stomp does not wait for SUBSCRIBE's receipt; the broker handles a connection's frames in order,
	// so a RECEIPT for a later frame on it means the subscription exists.
	tx, err := consumer.BeginWithError()
	if err == nil {
		err = tx.AbortWithReceipt()
	}
	if err != nil {
		return res, fmt.Errorf("consumer: no RECEIPT after SUBSCRIBE: %w", err)
	}
	producer, err := dial(o)
	if err != nil {
		return res, fmt.Errorf("producer: connect: %w", err)
	}
	defer producer.Disconnect()

	hist := hdrhistogram.New(lowestMicros, highestMicros, sigFigs)
	done, failed, sent := make(chan int, 1), make(chan error, 2), make(chan sendCount, 1)
	stop := make(chan struct{})
	cpu0, sys0 := cpuSeconds()
	start := time.Now()
	go consume(sub, o.messages, hist, stop, done, failed)
	go func() {
		if err := produce(producer, o, start, sent); err != nil {
			failed <- err
		}
	}()
	var runErr error
	res.Received = -1
	select {
	case res.Received = <-done:
		if res.Received < o.messages { // the consumer failed: its reason is waiting
			runErr = <-failed
		}
	case runErr = <-failed:
	case <-time.After(time.Duration(o.timeout * float64(time.Second))):
		runErr = fmt.Errorf("timeout: %gs passed before all %d messages arrived", o.timeout, o.messages)
	}
	wall := time.Since(start).Seconds()
	cpu1, sys1 := cpuSeconds()
	var count sendCount
	if runErr == nil {
		count = <-sent // all arrived, so all were sent: with -receipts the last RECEIPT may still be on its way
	} else {
		if res.Received < 0 {
			close(stop) // the consumer stops (if it has not) and says how many it recorded
			res.Received = <-done
		}
		select {
		case count = <-sent:
		default: // still sending
			count.n = -1
		}
	}
	res.Sent = count.n
	res.WallS, res.CPUS, res.SysS = wall, cpu1-cpu0, sys1-sys0
	if wall > 0 {
		res.MsgsPerS = float64(res.Received) / wall
	}
	ms := func(micros int64) float64 { return float64(micros) / 1000 }
	res.P50Ms, res.P90Ms, res.P99Ms = ms(hist.ValueAtQuantile(50)), ms(hist.ValueAtQuantile(90)), ms(hist.ValueAtQuantile(99))
	res.P999Ms, res.MaxMs, res.LateMaxMs = ms(hist.ValueAtQuantile(99.9)), ms(hist.Max()), count.lateMax.Seconds()*1000
	return res, runErr
}

func main() {
	o, err := parseOptions(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "goref:", err)
		}
		os.Exit(2)
	}
	res, err := run(o)
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	if err != nil {
		fmt.Fprintln(os.Stderr, "goref:", err)
		os.Exit(1)
	}
	if res.Received != o.messages {
		fmt.Fprintf(os.Stderr, "goref: %d of %d messages arrived\n", res.Received, o.messages)
		os.Exit(1)
	}
}
