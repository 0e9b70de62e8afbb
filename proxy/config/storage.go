package config

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// RedisStorage is "storage redis { ... }": certificates, the ACME account,
// the local CA and the locks in Redis (or Valkey), shared by every instance
// pointed at the same server and key_prefix. The names are those of
// Caddy's caddy-storage-redis.
type RedisStorage struct {
	Pos Pos
	// Addrs: one host:port for a single server, several for a Redis
	// Cluster, or the sentinels when MasterName is set.
	Addrs      []string
	MasterName string
	DB         int
	Username   string
	Password   string
	// KeyPrefix namespaces the keys ("" : the storage's default).
	KeyPrefix string
	// TLS connects with TLS, verifying the server against the system's
	// roots.
	TLS bool
	// Timeout bounds a connection attempt and each command (0: default).
	Timeout time.Duration
}

// redisDefaultAddr is caddy-storage-redis's default host and port.
const redisDefaultAddr = "127.0.0.1:6379"

// redisUnsupported are caddy-storage-redis options pollproxy lacks.
var redisUnsupported = []string{"encryption_key", "compression", "tls_insecure",
	"tls_server_certs_pem", "route_by_latency", "route_randomly", "value_prefix", "aes_key"}

// storage parses the storage global option:
//
//	storage DIR
//	storage file DIR                 (also Caddy's file_system, with "root DIR" in a block)
//	storage redis [{ address HOST:PORT...  db N  username U  password P  key_prefix P  tls  timeout 5s }]
func (p *parser) storage(d *caddyfile.Dispenser) {
	c := p.cfg
	args := d.RemainingArgs()
	switch {
	case len(args) == 1 && args[0] == "redis":
		c.Storage = ""
		c.Redis = p.redisStorage(d)
	case len(args) >= 1 && (args[0] == "file" || args[0] == "file_system"):
		dir := ""
		if len(args) == 2 {
			dir = args[1]
		} else if len(args) > 2 {
			p.errf(d, "storage: %s: want one directory", args[0])
		}
		for n := d.Nesting(); d.NextBlock(n); {
			if d.Val() != "root" {
				p.errf(d, "storage: %s: %s is not supported by pollproxy (want root DIR)", args[0], d.Val())
				d.RemainingArgs()
				skipBlock(d)
				continue
			}
			if v, ok := p.oneArg(d, "storage: "+args[0]+": root", "a directory"); ok {
				dir = v
			}
		}
		if dir == "" {
			p.errf(d, "storage: %s: want a directory: storage %s DIR", args[0], args[0])
		}
		c.Storage, c.Redis = dir, nil
	case len(args) == 1:
		if pos, n := dpos(d), d.Nesting(); d.NextBlock(n) {
			// A block makes the argument a storage module, as in Caddy.
			p.errAt(pos, "storage: %s is not supported by pollproxy (want a directory, file DIR or redis { ... })", args[0])
			for d.NextBlock(n) {
			}
			return
		}
		c.Storage, c.Redis = args[0], nil
	default:
		p.errf(d, "storage: want a directory, file DIR or redis { address HOST:PORT ... }")
		skipBlock(d)
	}
}

func (p *parser) redisStorage(d *caddyfile.Dispenser) *RedisStorage {
	r := &RedisStorage{Pos: dpos(d)}
	var host, port string
	for n := d.Nesting(); d.NextBlock(n); {
		sub := d.Val()
		label := "storage: redis: " + sub
		switch sub {
		case "address":
			args := d.RemainingArgs()
			if len(args) == 0 {
				p.errf(d, "%s: want one or more HOST:PORT (several: a Redis Cluster, or sentinels with master_name)", label)
			}
			for _, a := range args {
				for _, a := range strings.Split(a, ",") {
					if h, pt, err := net.SplitHostPort(a); err != nil || h == "" || !validPort(pt) {
						p.errf(d, "%s: %q: want HOST:PORT (e.g. 127.0.0.1:6379)", label, a)
						continue
					}
					r.Addrs = append(r.Addrs, a)
				}
			}
		case "host":
			host, _ = p.oneArg(d, label, "a host name or IP address")
		case "port":
			if v, ok := p.oneArg(d, label, "a port number"); ok {
				if !validPort(v) {
					p.errf(d, "%s: %q: want a port number (1-65535)", label, v)
				}
				port = v
			}
		case "master_name":
			r.MasterName, _ = p.oneArg(d, label, "the sentinel master's name")
		case "db":
			r.DB = p.intArg(d, label, 0)
		case "username":
			r.Username, _ = p.oneArg(d, label, "a user name")
		case "password":
			r.Password, _ = p.oneArg(d, label, "a password (e.g. {$REDIS_PASSWORD})")
		case "key_prefix":
			if v, ok := p.oneArg(d, label, "a key prefix"); ok {
				if v == "" || strings.ContainsAny(v, "{}") {
					p.errf(d, "%s: %q: want a non-empty prefix without braces", label, v)
				}
				r.KeyPrefix = v
			}
		case "tls", "tls_enabled":
			args := d.RemainingArgs()
			switch {
			case len(args) == 0:
				r.TLS = true
			case len(args) == 1 && (args[0] == "true" || args[0] == "false"):
				r.TLS = args[0] == "true"
			default:
				p.errf(d, "%s: want no argument, true or false", label)
			}
		case "timeout":
			// caddy-storage-redis takes seconds; a duration is accepted too.
			if v, ok := p.oneArg(d, label, "seconds or a duration such as 5s"); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					r.Timeout = time.Duration(n) * time.Second
				} else if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
					r.Timeout = dur
				} else {
					p.errf(d, "%s: %q: want seconds or a positive duration such as 5s", label, v)
				}
			}
		default:
			known := false
			for _, u := range redisUnsupported {
				known = known || u == sub
			}
			if known {
				p.errf(d, "%s is not supported by pollproxy", label)
			} else {
				p.errf(d, "storage: redis: unknown option %q (want address, db, username, password, key_prefix, tls, timeout, master_name)", sub)
			}
			d.RemainingArgs()
			skipBlock(d)
		}
	}
	if host != "" || port != "" {
		if len(r.Addrs) > 0 {
			p.errAt(r.Pos, "storage: redis: give either address or host and port")
		} else {
			h, pt, _ := net.SplitHostPort(redisDefaultAddr)
			if host != "" {
				h = host
			}
			if port != "" {
				pt = port
			}
			r.Addrs = []string{net.JoinHostPort(h, pt)}
		}
	}
	if len(r.Addrs) == 0 {
		r.Addrs = []string{redisDefaultAddr}
	}
	if len(r.Addrs) > 1 && r.MasterName == "" && r.DB != 0 {
		p.errAt(r.Pos, "storage: redis: db: a Redis Cluster (several addresses) has only database 0")
	}
	return r
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n <= 65535
}
