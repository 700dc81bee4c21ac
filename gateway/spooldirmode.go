package gateway

import "github.com/turnlog/turnlog/internal/privatedir"

// checkSpoolDir refuses a spool directory that users other than this
// process's may control. Every file in it is a call that the gateway
// records once NATS is back, with its own credential: whoever may write
// the directory could put calls of their own into any conversation, or
// remove the gateway's before they are recorded, without a credential.
// The directory the gateway makes is 0700; only one made beforehand, or
// a shared one such as /tmp given as --spool-dir, can be open.
func checkSpoolDir(dir string) error {
	return privatedir.Check(dir, privatedir.Use{Name: "gateway: the spool directory", Flag: "--spool-dir",
		Risk: "add calls to the record or remove the gateway's"})
}
