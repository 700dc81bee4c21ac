// Package faulttest holds the fault-injection matrix of issue 19: two
// workers and one chat client per conversation run on a 3-node cluster
// (natstest.StartFaultyCluster) whose routes and client connections go
// through Toxiproxy, while the network fails in one way per scenario (the
// events leader partitioned away, a worker's acknowledgements lost, the
// leader killed and restarted, a minority node hosting a worker cut off,
// the events leader silenced). Each scenario checks what a user would:
// no accepted request lost, duplicated or interleaved, `replay --verify`
// passes, the nodes agree after healing, no client reports a failure for a
// request that completed, and no request waits more than 20 s after the
// fault heals.
//
// `go test ./internal/faulttest` runs it at CI size (5 conversations x 10
// requests, shortened faults). TURNLOG_FAULTS=full runs the size
// (20 x 20, the fault durations), and TURNLOG_FAULTS_REPORT=FILE
// appends each scenario's figures to FILE as a JSON line.
package faulttest
