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

// serverURL is the URL of the server behind a pool made by one of redsync's adapters: go-redis
// v6 to v9 (the client's options: network, address, user, password, database, TLS), redigo
// (the server's own address and database as CLIENT INFO reports them on one of the pool's
// connections), rueidis and valkey-go (the client's node); or a URLPool.
func serverURL(p redis.Pool) (string, error) {
	if u, ok := p.(URLPool); ok {
		return string(u), nil
	}
	d := delegate(p)
	if o := optionsOf(d); o.IsValid() {
		return goredisURL(o), nil
	}
	if r, ok := d.(interface {
		GetContext(context.Context) (redigolib.Conn, error)
	}); ok {
		return redigoURL(r)
	}
	if addr := nodeOf(d); addr != "" {
		return "redis://" + addr, nil
	}
	return "", errorf("cannot find the server of a pool of type %T: use one of redsync's "+
		"adapters (go-redis, redigo, rueidis, valkey-go) or redsync.URLPool(url)", p)
}

// delegate is what an adapter's pool wraps (its unexported field `delegate`), read without
// changing it.
func delegate(p any) any {
	return field(reflect.ValueOf(p), "delegate")
}

// field reads a struct's (or a pointer to a struct's) field by name, exported or not, as an
// interface whose methods can be called; nil when there is none.
func field(v reflect.Value, name string) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	if !v.CanAddr() {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		v = c
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return nil
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
}

// optionsOf is a go-redis client's options (any version: its Options method's struct).
func optionsOf(client any) reflect.Value {
	if client == nil {
		return reflect.Value{}
	}
	m := reflect.ValueOf(client).MethodByName("Options")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return reflect.Value{}
	}
	o := reflect.Indirect(m.Call(nil)[0])
	if o.Kind() != reflect.Struct || !o.FieldByName("Password").IsValid() {
		return reflect.Value{}
	}
	return o
}

// goredisURL is the URL of a go-redis client's server (a cluster client's seed nodes).
func goredisURL(o reflect.Value) string {
	text := func(name string) string {
		if f := o.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
		return ""
	}
	tls := false
	if f := o.FieldByName("TLSConfig"); f.IsValid() && f.Kind() == reflect.Pointer {
		tls = !f.IsNil()
	}
	db := 0
	if f := o.FieldByName("DB"); f.IsValid() && f.CanInt() {
		db = int(f.Int())
	}
	user, password := text("Username"), text("Password")
	if addrs := o.FieldByName("Addrs"); addrs.IsValid() && addrs.Kind() == reflect.Slice {
		seeds := make([]string, addrs.Len())
		for i := range seeds {
			seeds[i] = addrs.Index(i).String()
		}
		scheme := "redis+cluster://"
		if tls {
			scheme = "rediss+cluster://"
		}
		return scheme + userinfo(user, password) + strings.Join(seeds, ",")
	}
	if text("Network") == "unix" {
		return unixURL(text("Addr"), db, user, password)
	}
	scheme := "redis"
	if tls {
		scheme = "rediss"
	}
	u := scheme + "://" + userinfo(user, password) + text("Addr")
	if db != 0 {
		u += "/" + strconv.Itoa(db)
	}
	return u
}

// unixURL is fencelock's URL of a server on a Unix socket.
func unixURL(path string, db int, user, password string) string {
	q := url.Values{}
	if db != 0 {
		q.Set("db", strconv.Itoa(db))
	}
	if user != "" {
		q.Set("user", user)
	}
	if password != "" {
		q.Set("pass", password)
	}
	u := "redis+unix://" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// nodeOf is the address of a rueidis or valkey-go client's one node (through the compat
// adapter redsync's pools take): its Nodes method's only key; "" otherwise.
func nodeOf(d any) string {
	client := field(reflect.ValueOf(d), "client")
	if client == nil {
		client = d
	}
	if client == nil {
		return ""
	}
	m := reflect.ValueOf(client).MethodByName("Nodes")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.Map {
		return ""
	}
	nodes := m.Call(nil)[0]
	if nodes.Len() != 1 || nodes.Type().Key().Kind() != reflect.String {
		return ""
	}
	return nodes.MapKeys()[0].String()
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
	db, _ := strconv.Atoi(fields["db"])
	if strings.HasPrefix(addr, "/") {
		// A Unix socket: "/path/redis.sock:0".
		return unixURL(strings.TrimSuffix(addr, ":0"), db, "", ""), nil
	}
	if addr == "" {
		return "", errorf("a redigo pool's server did not say its address (CLIENT INFO laddr=%q): use redsync.URLPool(url)", addr)
	}
	u := "redis://" + addr
	if db != 0 {
		u += "/" + strconv.Itoa(db)
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
