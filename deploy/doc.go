// Package deploy holds the configuration of turnlog's 3-node NATS cluster
// (nats-n1.conf, nats-n2.conf, nats-n3.conf, mounted by the
// docker-compose.yml at the repository root). Each node lets in only the
// roles' nkey users on its client port (auth.conf, with their public keys
// from auth/nkeys.env) and only servers that give the route password on
// its cluster port (auth/cluster.conf, included in its cluster block);
// `turnlog auth init --dir deploy/auth` makes both, and a node without
// them does not start. It has no code: its tests parse those files with
// nats-server's own parser and the compose file as YAML, because Docker
// does not run where the tests do, and start nodes in-process from their
// configuration to show that a route without the password is refused.
package deploy
