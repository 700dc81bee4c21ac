// Package deploy holds the configuration of turnlog's 3-node NATS cluster
// (nats-n1.conf, nats-n2.conf, nats-n3.conf, mounted by the
// docker-compose.yml at the repository root). It has no code: its tests
// parse those files with nats-server's own parser and the compose file as
// YAML, because Docker does not run where the tests do.
package deploy
