package temporalserver

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
)

// Port blocks are picked below the kernel's ephemeral range (32768 and up),
// so outgoing connections never take a cluster port between a restart's
// stop and start.
const (
	portRangeLow  = 15000
	portRangeHigh = 32000
	portBlockSize = 11
	portTries     = 100
)

// ports are the cluster's 127.0.0.1 ports, one contiguous block.
type ports struct {
	frontend, http, history, matching, worker int
	frontendMembership, historyMembership     int
	matchingMembership, workerMembership      int
	postgres, metrics                         int
}

func pickPorts() (ports, error) {
	for range portTries {
		base := portRangeLow + rand.IntN((portRangeHigh-portRangeLow)/portBlockSize)*portBlockSize
		if blockFree(base) {
			return ports{
				frontend: base, http: base + 1, history: base + 2, matching: base + 3, worker: base + 4,
				frontendMembership: base + 5, historyMembership: base + 6,
				matchingMembership: base + 7, workerMembership: base + 8,
				postgres: base + 9, metrics: base + 10,
			}, nil
		}
	}
	return ports{}, errors.New("no free block of 11 ports found between 15000 and 32000 on 127.0.0.1")
}

func blockFree(base int) bool {
	for p := base; p < base+portBlockSize; p++ {
		if !PortFree(net.JoinHostPort("127.0.0.1", strconv.Itoa(p))) {
			return false
		}
	}
	return true
}

func (p ports) addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// server lists the ports the Temporal server binds (all but PostgreSQL's).
func (p ports) server() []int {
	return []int{p.frontend, p.http, p.history, p.matching, p.worker,
		p.frontendMembership, p.historyMembership, p.matchingMembership, p.workerMembership, p.metrics}
}
