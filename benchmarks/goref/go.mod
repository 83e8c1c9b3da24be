module mqusers/benchmarks/goref

go 1.22

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	github.com/go-stomp/stomp/v3 v3.1.3
)
