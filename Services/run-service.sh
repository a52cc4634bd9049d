#!/bin/sh
# Starts the calling client's service on loopback: the registration service (voice-engine registration-service)
# and Kamailio with Services/kamailio/kamailio.cfg, both keeping their state in one directory of their own.
#   Services/run-service.sh STATE_DIR SIP_PORT HTTP_PORT VOICE_ENGINE_BINARY
# Applications (key → secret) are read from STATE_DIR/applications.json, created with a demo application the
# first time. The secret shared by the two services is created once in STATE_DIR/shared-secret.
# GATEWAY and CONFERENCE (environment, SIP URIs) say where Kamailio sends phone-number and conference calls
# (defaults in kamailio.cfg). Stops both on Ctrl-C.
set -eu
state=$1 sip_port=$2 http_port=$3 voice_engine=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$state"
state=$(cd "$state" && pwd)
if [ ! -f "$state/shared-secret" ]; then
  head -c 32 /dev/urandom | base64 | tr -d '\n' > "$state/shared-secret"
  chmod 600 "$state/shared-secret"
fi
if [ ! -f "$state/applications.json" ]; then
  printf '{"demo-application-key": "demo-application-secret"}\n' > "$state/applications.json"
  chmod 600 "$state/applications.json"
fi
if [ ! -f "$state/msilo.sqlite" ]; then
  cat /usr/share/kamailio/db_sqlite/standard-create.sql /usr/share/kamailio/db_sqlite/msilo-create.sql | sqlite3 "$state/msilo.sqlite"
fi
secret=$(cat "$state/shared-secret")
"$voice_engine" registration-service --listen "127.0.0.1:$http_port" --applications "$state/applications.json" \
  --state "$state" --shared-secret-file "$state/shared-secret" &
registration=$!
trap 'kill $registration 2>/dev/null' EXIT INT TERM
echo "registration service: http://127.0.0.1:$http_port/v1/registrations (pid $registration)"
echo "kamailio: sip:127.0.0.1:$sip_port (udp, tcp), domain voiceengine.test, state in $state"
/usr/sbin/kamailio -f "$here/kamailio/kamailio.cfg" -DD -E -l "udp:127.0.0.1:$sip_port" -l "tcp:127.0.0.1:$sip_port" \
  -A "SECRET=\"$secret\"" -A "MSILO_DB=\"sqlite://$state/msilo.sqlite\"" \
  -A "SELF=\"sip:127.0.0.1:$sip_port\"" ${GATEWAY:+-A "GATEWAY=\"$GATEWAY\""} ${CONFERENCE:+-A "CONFERENCE=\"$CONFERENCE\""} -P "$state/kamailio.pid" -Y "$state" -m 32 -M 8
