package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestCheckQuorum: what the probe concludes from a stream's cluster info,
// as a stream leader reports it.
func TestCheckQuorum(t *testing.T) {
	fresh := &jetstream.PeerInfo{Name: "n2", Current: true, Active: 400 * time.Millisecond}
	silent := &jetstream.PeerInfo{Name: "n3", Current: true, Active: 6 * time.Second}
	behind := &jetstream.PeerInfo{Name: "n3", Current: false, Active: 200 * time.Millisecond}
	neverSeen := &jetstream.PeerInfo{Name: "n3", Current: false, Active: 0}
	info := func(replicas int, leader string, peers ...*jetstream.PeerInfo) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{
			Config:  jetstream.StreamConfig{Name: "REQ", Replicas: replicas},
			Cluster: &jetstream.ClusterInfo{Leader: leader, Replicas: peers},
		}
	}
	tests := []struct {
		name string
		info *jetstream.StreamInfo
		want string // "" for a quorum
	}{
		{"single server", &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "REQ", Replicas: 1}, Cluster: &jetstream.ClusterInfo{Leader: "n1"}}, ""},
		{"R1 on a cluster", info(1, "n1"), ""},
		{"R3, both replicas heard", info(3, "n1", fresh, fresh), ""},
		{"R3, one replica silent", info(3, "n1", fresh, silent), ""},
		{"R3, one replica catching up", info(3, "n1", fresh, behind), ""},
		{"R3, both replicas catching up under load", info(3, "n1", behind, behind), ""},
		{"R3, both silent: the leader is cut off", info(3, "n1", silent, silent), "stream REQ's leader on server n1 hears from 0 of 2 replicas"},
		{"R3, one silent, one never seen", info(3, "n1", silent, neverSeen), "stream REQ's leader on server n1 hears from 0 of 2 replicas"},
		{"R3 without a leader", info(3, "", fresh, fresh), "stream REQ has no leader"},
		{"R5, two heard", info(5, "n1", fresh, fresh, silent, silent), ""},
		{"R5, one heard", info(5, "n1", fresh, silent, silent, silent), "stream REQ's leader on server n1 hears from 1 of 4 replicas"},
		{"R3 listing fewer replicas than configured", info(3, "n1", silent), "stream REQ's leader on server n1 hears from 0 of 2 replicas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkQuorum(tc.info)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, "JetStream answers without a quorum of its cluster", lossSign(fmt.Errorf("probe: %w", err)))
		})
	}
	assert.Equal(t, "JetStream does not answer", lossSign(fmt.Errorf("stream info REQ: %w", jetstream.ErrStreamNotFound)))
}
