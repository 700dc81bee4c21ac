package eventlog

// SetMaxBatchScan sets how far apart a conversation's last message and the
// base of a read must be for the read to follow links, and returns the
// function that restores it.
func SetMaxBatchScan(n uint64) (restore func()) {
	old := maxBatchScan
	maxBatchScan = n
	return func() { maxBatchScan = old }
}
