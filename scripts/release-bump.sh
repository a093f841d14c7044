#!/usr/bin/env bash
# Usage: scripts/release-bump.sh vX.Y.Z
#
# Makes every module of the repository require version vX.Y.Z of this repository's modules (the
# root module github.com/workqueue/work, and any nested module another one requires), maps that
# version to the checkout in go.work, and tidies each nested module's go.mod and go.sum outside the
# workspace, against vX.Y.Z of the modules as the tags about to be pushed will serve them: a module
# proxy built from the work tree (internal/release/cmd/modproxy). The go.sum hashes it writes for
# this repository's modules are those of the tree it runs on, so run it on the commit that is to be
# tagged and change nothing else before tagging (see RELEASING.md).
#
# It edits files only; it commits, tags and pushes nothing. It needs the go command and, for the
# dependencies missing from the local module cache, the module proxy and checksum database that
# the environment names.
set -euo pipefail
cd "$(dirname "$0")/.."

root=github.com/workqueue/work
version=${1:-}
if [ $# -ne 1 ] || ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 vX.Y.Z (a semantic version such as v0.2.0 or v1.0.0-rc.1)" >&2
  exit 2
fi
if [[ ! $version =~ ^v[01]\. ]]; then
  echo "$version: from v2 on, every module path takes a major version suffix (${root}/v2); this script does not do that" >&2
  exit 2
fi
if [ -n "$(git status --porcelain 2>/dev/null | grep -v -E '(^|/)(go\.mod|go\.sum|go\.work|go\.work\.sum)$' || true)" ]; then
  echo "warning: the work tree has changes besides go.mod, go.sum and go.work files; the go.sum hashes written" >&2
  echo "         below are those of this tree, and the tagged commit must hold exactly this tree" >&2
fi

# The modules: those of the workspace, root first (go list -m reads go.work and the go.mod files only).
mapfile -t modules < <(go list -m -f '{{.Path}}{{"\t"}}{{.Dir}}')
paths=()
for m in "${modules[@]}"; do paths+=("${m%%$'\t'*}"); done

# The version go.work maps to the checkout now.
old=$(go work edit -json | tr -d ' \t\n' | grep -o "\"Old\":{\"Path\":\"$root\",\"Version\":\"[^\"]*\"" | sed 's/.*"Version":"//; s/"$//' || true)

# Requirements on this repository's modules, in every module.
required=()
for m in "${modules[@]}"; do
  path=${m%%$'\t'*}; dir=${m#*$'\t'}
  reqs=$(cd "$dir" && go mod edit -json | tr -d ' \t\n')
  for p in "${paths[@]}"; do
    if [[ $reqs == *"{\"Path\":\"$p\",\"Version\":"* ]]; then
      (cd "$dir" && go mod edit -require="$p@$version")
      echo "$path: requires $p $version" >&2
      [ "$p" = "$root" ] || required+=("$p")
    fi
  done
done

# go.work: the new version is the checkout, for the root module and for each nested module another
# one requires (the workspace reads the go.mod of the version a module is required at).
for v in $old; do go work edit -dropreplace="$root@$v"; done
go work edit -replace="$root@$version=./"
echo "go.work: replace $root $version => ./ (was: ${old:-none})" >&2
for p in $(printf '%s\n' "${required[@]:-}" | sort -u); do
  for v in $old; do go work edit -dropreplace="$p@$v"; done
  go work edit -replace="$p@$version=./${p#"$root/"}"
  echo "go.work: replace $p $version => ./${p#"$root/"}" >&2
done

# Tidy the nested modules outside the workspace, against a proxy built from this tree. A nested
# module that requires another nested module needs that one's final go.mod and go.sum in its zip:
# passes repeat, each with a fresh proxy and module cache, until one changes nothing (so at least
# two run when anything changed).
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
modcache=$(go env GOMODCACHE)
proxies=""
[ -d "$modcache/cache/download" ] && proxies="file://$modcache/cache/download,"
proxies+=$(go env GOPROXY)
nosumdb=$(go env GONOSUMDB)
nosumdb=${nosumdb:+$nosumdb,}$root
flags="$(go env GOFLAGS) -mod=mod -modcacherw"

# The root module's zip holds go.work and go.work.sum: the workspace is loaded (which may add to
# go.work.sum) before each proxy is built, and the passes end when none of these files changes.
state() { for m in "${modules[@]}"; do d=${m#*$'\t'}; cat "$d/go.mod" "$d/go.sum" 2>/dev/null; done | cat - go.work go.work.sum 2>/dev/null | cksum; }
for pass in 1 2 3 4; do
  before=$(state)
  go list -m all >/dev/null
  rm -rf "$tmp/proxy" "$tmp/modcache"
  go run ./internal/release/cmd/modproxy -version "$version" -out "$tmp/proxy" >/dev/null
  for m in "${modules[@]}"; do
    path=${m%%$'\t'*}; dir=${m#*$'\t'}
    [ "$path" = "$root" ] && continue
    # Hashes of this repository's modules are written afresh, for the tree being tagged.
    [ -f "$dir/go.sum" ] && sed -i.bak -E "\\#^$root[ /]#d" "$dir/go.sum" && rm -f "$dir/go.sum.bak"
    if ! (cd "$dir" && GOWORK=off GOFLAGS="$flags" GOPROXY="file://$tmp/proxy,$proxies" GONOSUMDB="$nosumdb" \
        GOMODCACHE="$tmp/modcache" GIT_TERMINAL_PROMPT=0 go mod tidy) >"$tmp/log" 2>&1; then
      cat "$tmp/log" >&2
      echo "go mod tidy failed in $dir: its go.mod requires $version already; fix the cause and run this again" >&2
      exit 1
    fi
  done
  echo "pass $pass: tidied the nested modules" >&2
  [ "$(state)" = "$before" ] && break
  if [ "$pass" = 4 ]; then echo "the go.mod and go.sum files still change after $pass passes" >&2; exit 1; fi
done

echo "done: every module requires $version of this repository's modules; next steps in RELEASING.md" >&2
git status --short -- '*go.mod' '*go.sum' go.work go.work.sum 2>/dev/null || true
