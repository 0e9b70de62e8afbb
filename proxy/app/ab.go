package app

import (
	"github.com/pollproxy/pollproxy/proxy/ab"
	"github.com/pollproxy/pollproxy/proxy/config"
)

// startAB starts the A/B sampler of the running loops. With two pollers
// named it also runs the crossover (ab_rotate): every loop alternates
// between them through the same live switch POST /poller uses
// (netpoll.Group.Switch), which serialises the two.
func (in *Instance) startAB(cfg *config.Config, backends []string) {
	in.ab = ab.NewSampler(in.group, in.metrics.LatencyRecorders(), cfg.ABInterval, backends)
	in.ab.SetRotate(cfg.ABRotate)
	in.ab.Start()
}
