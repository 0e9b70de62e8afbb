package app

import (
	stdtls "crypto/tls"

	"github.com/caddyserver/certmagic"

	"github.com/pollproxy/pollproxy/proxy/config"
	"github.com/pollproxy/pollproxy/tls/redisstore"
)

// certStorage returns the shared certificate storage the configuration
// names (storage redis), or nil for the file storage at cfg.Storage. Its
// metrics join the admin listener's. It does not wait for Redis: an
// instance starts while Redis is down, reports it, and uses it when it
// answers.
func (in *Instance) certStorage(cfg *config.Config) (certmagic.Storage, error) {
	r := cfg.Redis
	if r == nil {
		return nil, nil
	}
	opts := redisstore.Options{
		Addrs:      r.Addrs,
		MasterName: r.MasterName,
		DB:         r.DB,
		Username:   r.Username,
		Password:   r.Password,
		KeyPrefix:  r.KeyPrefix,
		Timeout:    r.Timeout,
		Logger:     in.opts.Logger, // nil: slog.Default(), so an outage is never silent
	}
	if r.TLS {
		opts.TLS = &stdtls.Config{MinVersion: stdtls.VersionTLS12}
	}
	s, err := redisstore.New(opts)
	if err != nil {
		return nil, err
	}
	if in.metrics != nil {
		in.metrics.Registry().MustRegister(s.Collector())
	}
	return s, nil
}
