package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const storageSite = "localhost:8443 {\n\treverse_proxy 127.0.0.1:8080\n}\n"

func TestStorageOption(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		dir      string
		redis    *RedisStorage
	}{
		{"directory", "storage /var/lib/pollproxy", "/var/lib/pollproxy", nil},
		{"file", "storage file /srv/certs", "/srv/certs", nil},
		{"file_system block", "storage file_system {\n\t\troot /srv/certs\n\t}", "/srv/certs", nil},
		{"redis defaults", "storage redis", "", &RedisStorage{Pos: Pos{"Caddyfile", 2}, Addrs: []string{"127.0.0.1:6379"}}},
		{"redis full", "storage redis {\n\t\taddress 10.0.0.5:6380\n\t\tdb 3\n\t\tusername proxy\n\t\tpassword s3cret\n\t\tkey_prefix edge\n\t\ttls\n\t\ttimeout 2\n\t}", "",
			&RedisStorage{Pos: Pos{"Caddyfile", 2}, Addrs: []string{"10.0.0.5:6380"}, DB: 3, Username: "proxy", Password: "s3cret",
				KeyPrefix: "edge", TLS: true, Timeout: 2 * time.Second}},
		{"redis host port", "storage redis {\n\t\thost redis.internal\n\t\tport 6390\n\t\ttls_enabled false\n\t\ttimeout 750ms\n\t}", "",
			&RedisStorage{Pos: Pos{"Caddyfile", 2}, Addrs: []string{"redis.internal:6390"}, Timeout: 750 * time.Millisecond}},
		{"redis cluster", "storage redis {\n\t\taddress 10.0.0.1:7000 10.0.0.2:7000,10.0.0.3:7000\n\t}", "",
			&RedisStorage{Pos: Pos{"Caddyfile", 2}, Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}}},
		{"sentinel", "storage redis {\n\t\taddress 10.0.0.1:26379 10.0.0.2:26379\n\t\tmaster_name certs\n\t\tdb 2\n\t}", "",
			&RedisStorage{Pos: Pos{"Caddyfile", 2}, Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, MasterName: "certs", DB: 2}},
		{"last wins", "storage redis\n\tstorage /data", "/data", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, "{\n\t"+tc.in+"\n}\n"+storageSite)
			if c.Storage != tc.dir || !reflect.DeepEqual(c.Redis, tc.redis) {
				t.Fatalf("storage %q redis %+v, want %q %+v", c.Storage, c.Redis, tc.dir, tc.redis)
			}
		})
	}
}

func TestStorageErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no argument", "storage", `Caddyfile:2: storage: want a directory, file DIR or redis`},
		{"file without dir", "storage file", `Caddyfile:2: storage: file: want a directory: storage file DIR`},
		{"other module", "storage consul {\n\t\taddress 127.0.0.1:8500\n\t}",
			`Caddyfile:2: storage: consul is not supported by pollproxy`},
		{"bad address", "storage redis {\n\t\taddress redis.internal\n\t}",
			`Caddyfile:3: storage: redis: address: "redis.internal": want HOST:PORT (e.g. 127.0.0.1:6379)`},
		{"bad port", "storage redis {\n\t\taddress 127.0.0.1:99999\n\t}",
			`Caddyfile:3: storage: redis: address: "127.0.0.1:99999": want HOST:PORT`},
		{"bad db", "storage redis {\n\t\tdb -1\n\t}", `Caddyfile:3: storage: redis: db: "-1": want a whole number >= 0`},
		{"password args", "storage redis {\n\n\t\tpassword a b\n\t}", `Caddyfile:4: storage: redis: password: want one argument`},
		{"prefix braces", "storage redis {\n\t\tkey_prefix {a}\n\t}", `Caddyfile:3: storage: redis: key_prefix: "{a}": want a non-empty prefix without braces`},
		{"bad tls", "storage redis {\n\t\ttls maybe\n\t}", `Caddyfile:3: storage: redis: tls: want no argument, true or false`},
		{"bad timeout", "storage redis {\n\t\ttimeout soon\n\t}", `Caddyfile:3: storage: redis: timeout: "soon": want seconds or a positive duration`},
		{"unsupported", "storage redis {\n\t\tencryption_key 0123\n\t}", `Caddyfile:3: storage: redis: encryption_key is not supported by pollproxy`},
		{"insecure", "storage redis {\n\t\ttls_insecure true\n\t}", `Caddyfile:3: storage: redis: tls_insecure is not supported by pollproxy`},
		{"unknown", "storage redis {\n\t\tshards 4\n\t}", `Caddyfile:3: storage: redis: unknown option "shards" (want address, db,`},
		{"address and host", "storage redis {\n\t\taddress 127.0.0.1:6379\n\t\thost 10.0.0.1\n\t}", `Caddyfile:2: storage: redis: give either address or host and port`},
		{"cluster db", "storage redis {\n\t\taddress 10.0.0.1:7000 10.0.0.2:7000\n\t\tdb 1\n\t}", `Caddyfile:2: storage: redis: db: a Redis Cluster (several addresses) has only database 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("Caddyfile", []byte("{\n\t"+tc.in+"\n}\n"+storageSite))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
