package goredis

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
)

// This file translates between redigo's conventions, which the work package speaks, and go-redis's:
// command arguments on the way in, replies on the way out.

// commandArgs builds go-redis's argument list for a redigo-style command. Arguments are encoded the
// way redigo encodes them: strings and []byte as they are, integers in decimal, float64 in the
// shortest form, bool as 1 or 0, nil as the empty string, a redigo Argument by its RedisArg, and
// anything else with fmt.Sprint.
func commandArgs(name string, args []interface{}) []interface{} {
	out := make([]interface{}, 1+len(args))
	out[0] = name
	for i, a := range args {
		out[i+1] = redigoArg(a)
	}
	return out
}

func redigoArg(a interface{}) interface{} {
	switch v := a.(type) {
	case string, []byte, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case nil:
		return ""
	case redigo.Argument:
		return redigoArg(v.RedisArg())
	default:
		return fmt.Sprint(v)
	}
}

// lowerName returns a command's name in lower case (go-redis's convention for routing).
func lowerName(args []interface{}) string {
	if len(args) == 0 {
		return ""
	}
	s, _ := args[0].(string)
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func argString(a interface{}) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// keylessCommands take no key: in a cluster they may run on any node.
var keylessCommands = map[string]bool{
	"acl": true, "asking": true, "auth": true, "bgrewriteaof": true, "bgsave": true, "client": true,
	"cluster": true, "command": true, "config": true, "dbsize": true, "debug": true, "discard": true,
	"echo": true, "exec": true, "failover": true, "flushall": true, "flushdb": true, "function": true,
	"hello": true, "info": true, "keys": true, "lastsave": true, "latency": true, "lolwut": true,
	"memory": true, "module": true, "monitor": true, "multi": true, "ping": true, "psubscribe": true,
	"psync": true, "publish": true, "pubsub": true, "punsubscribe": true, "quit": true,
	"randomkey": true, "readonly": true, "readwrite": true, "replicaof": true, "reset": true,
	"role": true, "save": true, "scan": true, "script": true, "select": true, "shutdown": true,
	"slaveof": true, "slowlog": true, "subscribe": true, "swapdb": true, "sync": true, "time": true,
	"unsubscribe": true, "unwatch": true, "wait": true, "waitaof": true,
}

// firstKey returns the first key of a command, which decides its hash slot in a cluster: the first
// KEYS entry of EVAL, EVALSHA and FCALL (none when numkeys is 0), none for a keyless command, else
// the first argument.
func firstKey(name string, args []interface{}) (string, bool) {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		if len(args) < 4 {
			return "", false
		}
		if n, err := strconv.Atoi(argString(args[2])); err != nil || n <= 0 {
			return "", false
		}
		return argString(args[3]), true
	case "memory":
		if len(args) >= 3 && strings.EqualFold(argString(args[1]), "usage") {
			return argString(args[2]), true
		}
		return "", false
	case "object":
		if len(args) >= 3 {
			return argString(args[2]), true
		}
		return "", false
	}
	if keylessCommands[name] || len(args) < 2 {
		return "", false
	}
	return argString(args[1]), true
}

// statusReply reports whether a command answers with a status reply ("OK", "PONG", "string"...),
// which redigo returns as a string, rather than a bulk string, which it returns as []byte. go-redis
// returns both as a string, so the command decides.
func statusReply(name string, args []interface{}) bool {
	switch name {
	case "set":
		for _, a := range args[2:] {
			if strings.EqualFold(argString(a), "get") {
				return false
			}
		}
		return true
	case "ping":
		return len(args) == 1
	case "setex", "psetex", "mset", "multi", "discard", "watch", "unwatch", "select", "flushall",
		"flushdb", "rename", "ltrim", "lset", "hmset", "type", "save", "bgsave", "bgrewriteaof",
		"auth", "quit", "restore", "migrate", "shutdown", "replicaof", "slaveof", "readonly",
		"readwrite", "pfmerge", "swapdb", "asking", "reset", "debug", "failover":
		return true
	case "config", "script", "client", "cluster", "function", "xgroup", "acl", "module", "latency":
		if len(args) < 2 {
			return false
		}
		switch sub := strings.ToLower(argString(args[1])); name {
		case "config":
			return sub == "set" || sub == "resetstat" || sub == "rewrite"
		case "script":
			return sub == "flush" || sub == "kill"
		case "client":
			return sub != "list" && sub != "info" && sub != "getname" && sub != "id" &&
				sub != "kill" && sub != "getredir" && sub != "unblock" && sub != "trackinginfo"
		case "cluster":
			return sub != "info" && sub != "nodes" && sub != "myid" && sub != "slots" &&
				sub != "shards" && sub != "replicas" && sub != "slaves" && sub != "keyslot" &&
				sub != "countkeysinslot" && sub != "getkeysinslot" && sub != "links" &&
				sub != "count-failure-reports" && sub != "myshardid"
		case "function":
			return sub == "delete" || sub == "flush" || sub == "restore" || sub == "kill"
		case "xgroup":
			return sub == "create" || sub == "setid"
		case "acl":
			return sub == "setuser" || sub == "load" || sub == "save"
		case "module":
			return sub == "load" || sub == "unload" || sub == "loadex"
		}
	}
	return false
}

// withScoresReply reports whether a sorted-set command's reply holds member/score pairs, which
// RESP3 sends as nested pairs and RESP2 flat.
func withScoresReply(name string, args []interface{}) bool {
	if !strings.HasPrefix(name, "z") && !strings.HasPrefix(name, "bz") {
		return false
	}
	switch name {
	case "zpopmin", "zpopmax", "bzpopmin", "bzpopmax", "zmpop", "bzmpop":
		return true
	}
	for _, a := range args[1:] {
		if s, ok := a.(string); ok && strings.EqualFold(s, "withscores") {
			return true
		}
	}
	return false
}

// convertReply turns a go-redis reply value into redigo's types: bulk strings are []byte, status
// replies strings, integers int64, arrays []interface{} (nested), nil stays nil and error elements
// become redigo's redis.Error. RESP3 types, which a client on protocol 3 receives, are mapped to
// what the same command answers in RESP2: maps to flat key/value arrays, doubles to their decimal
// text, booleans to 1 or nil, big numbers to their text, member/score pairs to a flat array.
func convertReply(name string, args []interface{}, v interface{}) interface{} {
	if s, ok := v.(string); ok && statusReply(name, args) {
		return s
	}
	if arr, ok := v.([]interface{}); ok && withScoresReply(name, args) {
		return flattenPairs(arr)
	}
	return convertValue(v)
}

func convertValue(v interface{}) interface{} {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []byte(x)
	case int64:
		return x
	case []byte:
		return x
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = convertValue(e)
		}
		return out
	case map[interface{}]interface{}:
		out := make([]interface{}, 0, 2*len(x))
		for k, e := range x {
			out = append(out, convertValue(k), convertValue(e))
		}
		return out
	case float64:
		return []byte(formatDouble(x))
	case bool:
		if x {
			return int64(1)
		}
		return nil
	case *big.Int:
		return []byte(x.String())
	case error:
		return toRedigoError(x)
	default:
		return []byte(fmt.Sprint(x))
	}
}

// flattenPairs turns RESP3's [[member, score], ...] into RESP2's [member, score, ...]; a reply that
// is already flat is converted as it is.
func flattenPairs(arr []interface{}) interface{} {
	nested := len(arr) > 0
	for _, e := range arr {
		if p, ok := e.([]interface{}); !ok || len(p) != 2 {
			nested = false
			break
		}
	}
	if !nested {
		return convertValue(arr)
	}
	out := make([]interface{}, 0, 2*len(arr))
	for _, e := range arr {
		p := e.([]interface{})
		out = append(out, convertValue(p[0]), convertValue(p[1]))
	}
	return out
}

// formatDouble writes a double as Redis does in RESP2 replies.
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == math.Trunc(f) && math.Abs(f) < 1e17:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// isServerError reports whether err is an error reply of the server (or one go-redis made up in its
// place, like CROSSSLOT), as opposed to a failure of the connection.
func isServerError(err error) bool {
	_, ok := err.(redis.Error)
	return ok
}

func toRedigoError(err error) redigo.Error {
	if e, ok := err.(redigo.Error); ok {
		return e
	}
	return redigo.Error(err.Error())
}
