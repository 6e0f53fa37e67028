package redsync

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"github.com/go-redsync/redsync/v4/redis"
	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
)

// URLPool is a pool named by a fencelock server URL (redis://, rediss://, redis+sentinel://,
// redis+cluster://): for servers no redsync adapter reaches, or a password a redigo pool
// keeps to itself. Its Get is not used by fencelock (and fails).
type URLPool string

// Get fails: a URLPool only names its server.
func (p URLPool) Get(context.Context) (redis.Conn, error) {
	return nil, errorf("a URLPool (%s) has no connections of its own", redactURL(string(p)))
}

// serverURLs finds the server of every pool (see serverURL).
func serverURLs(pools []redis.Pool) ([]string, error) {
	if len(pools) == 0 {
		return nil, errorf("no pools: give redsync.New at least one")
	}
	urls := make([]string, len(pools))
	for i, p := range pools {
		u, err := serverURL(p)
		if err != nil {
			return nil, fmt.Errorf("pool #%d: %w", i, err)
		}
		urls[i] = u
	}
	return urls, nil
}

// serverURL is the URL of the server behind a pool made by redsync's goredis/v9 adapter (its
// client's options: address, user, password, database, TLS), its redigo adapter (the server's
// own address and database as CLIENT INFO reports them on one of the pool's connections), or
// a URLPool.
func serverURL(p redis.Pool) (string, error) {
	if u, ok := p.(URLPool); ok {
		return string(u), nil
	}
	switch d := delegate(p).(type) {
	case *goredislib.Client:
		return clientURL(d.Options()), nil
	case *goredislib.ClusterClient:
		o := d.Options()
		return "redis+cluster://" + userinfo(o.Username, o.Password) + strings.Join(o.Addrs, ","), nil
	case interface {
		GetContext(context.Context) (redigolib.Conn, error)
	}:
		return redigoURL(d)
	}
	return "", errorf("cannot find the server of a pool of type %T: use redsync's goredis/v9 or "+
		"redigo adapter, or redsync.URLPool(url)", p)
}

// delegate is what an adapter's pool wraps (its unexported field `delegate`), read without
// changing it.
func delegate(p redis.Pool) any {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	f := v.FieldByName("delegate")
	if !f.IsValid() || !f.CanAddr() {
		return nil
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
}

func userinfo(user, password string) string {
	switch {
	case password != "":
		return url.UserPassword(user, password).String() + "@"
	case user != "":
		return url.User(user).String() + "@"
	}
	return ""
}

func clientURL(o *goredislib.Options) string {
	scheme := "redis"
	if o.TLSConfig != nil {
		scheme = "rediss"
	}
	u := scheme + "://" + userinfo(o.Username, o.Password) + o.Addr
	if o.DB != 0 {
		u += "/" + strconv.Itoa(o.DB)
	}
	return u
}

// redigoURL asks one of the pool's connections where it is: CLIENT INFO's laddr (the
// server's address as the connection reached it) and db.
func redigoURL(p interface {
	GetContext(context.Context) (redigolib.Conn, error)
}) (string, error) {
	conn, err := p.GetContext(context.Background())
	if err != nil {
		return "", errorf("asking a redigo pool for its server: %v", err)
	}
	defer conn.Close()
	info, err := redigolib.String(conn.Do("CLIENT", "INFO"))
	if err != nil {
		return "", errorf("asking a redigo pool for its server (CLIENT INFO, Redis 6.2 or later): %v", err)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(info) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	addr := fields["laddr"]
	if addr == "" || strings.HasPrefix(addr, "/") {
		return "", errorf("a redigo pool's server did not say its address (CLIENT INFO laddr=%q): use redsync.URLPool(url)", addr)
	}
	u := "redis://" + addr
	if db := fields["db"]; db != "" && db != "0" {
		u += "/" + db
	}
	return u, nil
}

// redactURL masks a URL's password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	return u.String()
}
