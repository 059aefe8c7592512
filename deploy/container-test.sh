#!/bin/sh
# Builds the container image of the Dockerfile and checks a container of it:
# it runs as an unprivileged user, answers its health check, serves the API
# with the bootstrap key, logs requests as JSON, drains on stop and keeps
# its data in the /data volume across a restart.
#
#   deploy/container-test.sh            # with podman
#   CONTAINER=docker deploy/container-test.sh
#
# deploy/image-test.sh (make image-test) runs it where no registry answers.
#
# Environment: CONTAINER (podman or docker), CONTAINER_FLAGS (global
# flags of every CONTAINER command, e.g. podman's --storage-driver), IMAGE
# (tag to build, default coppice:test), PORT (host port, default 18080),
# BUILD_FLAGS and RUN_FLAGS (extra arguments of build and run, e.g.
# --build-arg GO_IMAGE=… or --ulimit), KEEP=1 keeps the image. Needs curl.
set -eu
cd "$(dirname "$0")/.."

CONTAINER=${CONTAINER:-podman}
CONTAINER_FLAGS=${CONTAINER_FLAGS:-}
IMAGE=${IMAGE:-coppice:test}
PORT=${PORT:-18080}
BUILD_FLAGS=${BUILD_FLAGS:-}
RUN_FLAGS=${RUN_FLAGS:-}
NAME=coppice-test-$$
VOLUME=coppice-test-data-$$
KEY=cpk_container_test_key_0123456789abcdef
URL=http://127.0.0.1:$PORT

# c runs the container tool with its global flags.
# shellcheck disable=SC2086
c() { $CONTAINER $CONTAINER_FLAGS "$@"; }

fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
step() { echo "container-test: $*"; }

cleanup() {
	c rm -f "$NAME" >/dev/null 2>&1 || true
	c volume rm -f "$VOLUME" >/dev/null 2>&1 || true
	if [ "${KEEP:-}" != 1 ]; then c rmi "$IMAGE" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

format=
if [ "$CONTAINER" = podman ]; then format="--format docker"; fi # HEALTHCHECK is a docker-format field
step "building $IMAGE"
# shellcheck disable=SC2086
c build $format $BUILD_FLAGS -t "$IMAGE" . || fail "build"

step "checking the image configuration"
user=$(c image inspect --format '{{.Config.User}}' "$IMAGE")
[ "$user" = "65532:65532" ] || fail "image user is [$user], want 65532:65532"
health=$(c image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")
echo "$health" | grep -q healthcheck || fail "no HEALTHCHECK in the image: $health"
volumes=$(c image inspect --format '{{json .Config.Volumes}}' "$IMAGE")
echo "$volumes" | grep -q '"/data"' || fail "no /data volume: $volumes"

# api KEY METHOD PATH [BODY]: the status, then the body on the next line.
api() {
	if [ $# -ge 4 ]; then
		curl -sS -o /tmp/ct-body.$$ -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" -d "$4" "$URL$3"
	else
		curl -sS -o /tmp/ct-body.$$ -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" "$URL$3"
	fi
	echo
	cat /tmp/ct-body.$$
	rm -f /tmp/ct-body.$$
}
expect() { # expect STATUS KEY METHOD PATH [BODY]
	want=$1
	shift
	out=$(api "$@")
	got=$(echo "$out" | head -n 1)
	[ "$got" = "$want" ] || fail "$2 $3: status $got, want $want: $(echo "$out" | tail -n +2)"
	echo "$out" | tail -n +2
}
wait_ready() {
	i=0
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || { c logs "$NAME" >&2; fail "not ready after 20 s"; }
		sleep 0.2
	done
}

step "starting a container"
# shellcheck disable=SC2086
c run -d --name "$NAME" -p "127.0.0.1:$PORT:8080" -v "$VOLUME:/data" \
	-e COPPICE_BOOTSTRAP_KEY=$KEY -e COPPICE_LOG_FORMAT=json $RUN_FLAGS "$IMAGE" >/dev/null || fail "run"
wait_ready

step "checking the health check, the version and the user"
if [ "$CONTAINER" = podman ]; then
	c healthcheck run "$NAME" || fail "health check failed"
	health=$(c inspect --format '{{.State.Health.Status}}' "$NAME")
	[ "$health" = healthy ] || fail "health status [$health], want healthy"
else
	c exec "$NAME" /coppice healthcheck || fail "health check failed"
fi
c exec "$NAME" /coppice version | grep -q '^coppice ' || fail "coppice version"
uid=$(c top "$NAME" -eo uid 2>/dev/null | tail -n 1 | tr -d ' ' || true)
if [ "$CONTAINER" = podman ]; then uid=$(c top "$NAME" huser | tail -n 1 | tr -d ' '); fi
[ "$uid" = 65532 ] || fail "server runs as [$uid], want 65532"

step "using the API"
ws=$(expect 200 $KEY GET /workspaces | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$ws" ] || fail "no workspace id"
expect 201 $KEY PUT "/workspaces/$ws/dbs/app" '{"region":"local"}' >/dev/null
expect 201 $KEY PUT "/ws/$ws/db/app:main/tables/notes" >/dev/null
expect 200 $KEY POST "/ws/$ws/db/app:main/tables/notes/columns" '{"name":"text","type":"string"}' >/dev/null
expect 201 $KEY PUT "/ws/$ws/db/app:main/tables/notes/data/n1" '{"text":"kept across restarts"}' >/dev/null
expect 401 cpk_wrong GET /user >/dev/null
expect 200 "" GET /openapi.json | grep -q '"openapi":"3.1.0"' || fail "openapi.json"

step "restarting: SIGTERM drains, the volume keeps the data"
c stop -t 60 "$NAME" >/dev/null
c logs "$NAME" 2>&1 | grep -q '"msg":"shutting down"' || fail "no drain on stop"
c start "$NAME" >/dev/null
wait_ready
expect 200 $KEY GET "/ws/$ws/db/app:main/tables/notes/data/n1" | grep -q 'kept across restarts' || fail "record lost"

step "checking the logs"
logs=$(c logs "$NAME" 2>&1)
echo "$logs" | grep -q '"msg":"request".*"route":"/db/{db_branch_name}/tables/{table_name}/data/{record_id}"' ||
	fail "no access log line: $logs"
# The key appears once, in the first start's credentials on stdout.
if echo "$logs" | grep -v '^  API key ' | grep -q "$KEY"; then fail "the log holds the API key"; fi

step "PASS"
