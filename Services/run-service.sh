#!/bin/sh
# Starts the calling client's service on loopback: PostgreSQL, coturn (STUN/TURN for the calls), the registration
# service (voice-engine registration-service, HTTPS; with its APNs and FCM push senders when they are configured,
# see "Push" below) and Kamailio with Services/kamailio/kamailio.cfg (SIP over TLS for clients; UDP and
# TCP for SIP peers), the last two keeping their state in PostgreSQL (a cluster of its own in STATE_DIR/postgresql,
# on 127.0.0.1:DB_PORT).
#   Services/run-service.sh STATE_DIR SIP_PORT HTTPS_PORT VOICE_ENGINE_BINARY
# Kamailio takes TLS on SIP_TLS_PORT (environment; SIP_PORT + 1 by default), UDP and TCP on SIP_PORT.
# The first run creates, in STATE_DIR: a local certificate authority (ca.pem, its key ca.key) and a server
# certificate it signs (server.pem, server.key) for SERVICE_NAMES (environment, openssl subjectAltName syntax;
# localhost, voiceengine.test, 127.0.0.1 and ::1 by default); clients trust ca.pem (`voice-engine phone --ca-file`,
# VoiceClientConfiguration's `.tls(trustRoots: .pemFile(…))`). Applications (key → secret) are read from
# STATE_DIR/applications.json, created with a demo application the first time, and added to the database at each
# start. The secret shared by the two services is created once in STATE_DIR/shared-secret, the database password
# in STATE_DIR/database-password.
# SERVICE_ADDRESS (environment, 127.0.0.1 by default) is the address Kamailio, the registration service and coturn
# listen on (PostgreSQL stays on loopback). GATEWAY and CONFERENCE (environment, SIP URIs) say where Kamailio sends
# phone-number and conference calls (defaults in kamailio.cfg); DB_PORT (environment) PostgreSQL's port, 5433 by
# default. Monitoring, plain HTTP on 127.0.0.1 for a Prometheus scraper: the registration service's /metrics and
# /health on METRICS_PORT (environment; HTTPS_PORT + 1 by default) and Kamailio's statistics on KAMAILIO_METRICS_PORT
# (SIP_TLS_PORT + 1 by default), both at /metrics. NODES (environment, the SIP URIs of every node's UDP address,
# this one's included, separated by spaces): Kamailio runs as one node of several sharing the database
# (kamailio.cfg's CLUSTER; every node on its own host address). KAMAILIO_SHM_MB (environment, 256 by default):
# Kamailio's shared memory, which holds every transaction until a few seconds after it ends (32 MB ran out at
# 200 call setups/s). Stops all on Ctrl-C.
set -eu
state=$1 sip_port=$2 http_port=$3 voice_engine=$4
tls_port=${SIP_TLS_PORT:-$((sip_port + 1))}
metrics_port=${METRICS_PORT:-$((http_port + 1))}
kamailio_metrics_port=${KAMAILIO_METRICS_PORT:-$((tls_port + 1))}
names=${SERVICE_NAMES:-DNS:localhost,DNS:voiceengine.test,IP:127.0.0.1,IP:::1}
address=${SERVICE_ADDRESS:-127.0.0.1}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$state"
state=$(cd "$state" && pwd)
if [ ! -f "$state/ca.pem" ] || [ ! -f "$state/server.pem" ]; then
  ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  # shellcheck disable=SC2086
  openssl req -x509 $ec -keyout "$state/ca.key" -out "$state/ca.pem" -days 3650 -subj "/CN=VoiceEngine service CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2> "$state/openssl.log"
  # shellcheck disable=SC2086
  openssl req $ec -keyout "$state/server.key" -out "$state/server.csr" -subj "/CN=voiceengine.test" 2>> "$state/openssl.log"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' \
    "$names" > "$state/server.ext"
  openssl x509 -req -in "$state/server.csr" -CA "$state/ca.pem" -CAkey "$state/ca.key" -CAcreateserial \
    -out "$state/server.pem" -days 825 -extfile "$state/server.ext" 2>> "$state/openssl.log"
  chmod 600 "$state/ca.key" "$state/server.key"
fi
cat > "$state/tls.cfg" <<TLS
[server:default]
method = TLSv1.2+
verify_certificate = no
require_certificate = no
private_key = $state/server.key
certificate = $state/server.pem

[client:default]
method = TLSv1.2+
verify_certificate = yes
require_certificate = yes
ca_list = $state/ca.pem
TLS
if [ ! -f "$state/shared-secret" ]; then
  head -c 32 /dev/urandom | base64 | tr -d '\n' > "$state/shared-secret"
  chmod 600 "$state/shared-secret"
fi
if [ ! -f "$state/applications.json" ]; then
  printf '{"demo-application-key": "demo-application-secret"}\n' > "$state/applications.json"
  chmod 600 "$state/applications.json"
fi

# Push (the registration service pushes phones through APNs and FCM when a device registered a managed push token;
# Kamailio posts kept calls and stored messages to it with the secret in STATE_DIR/push-secret). Each platform is on
# when its settings are given, in the environment or in the file PUSH_CONFIG (environment; STATE_DIR/push.env by
# default, read when it exists: lines NAME=value of the names below, # comments; the environment wins):
#   APNs (iOS, VoIP pushes): APNS_KEY_FILE (the .p8 token-authentication key), APNS_KEY_ID, APNS_TEAM_ID,
#     APNS_BUNDLE_ID (pushes go to <bundle ID>.voip); APNS_ENDPOINT (https://api.sandbox.push.apple.com for
#     development builds; https://api.push.apple.com by default).
#   FCM (Android): FCM_SERVICE_ACCOUNT (the service account's JSON key file); FCM_ENDPOINT, FCM_TOKEN_ENDPOINT.
#   PUSH_TRUST_ROOTS: PEM file of the CAs the push services' certificates chain to, when not the system's.
# The script says at start which platform is on and which is off and why.
push_names="APNS_KEY_FILE APNS_KEY_ID APNS_TEAM_ID APNS_BUNDLE_ID APNS_ENDPOINT FCM_SERVICE_ACCOUNT FCM_ENDPOINT \
FCM_TOKEN_ENDPOINT PUSH_TRUST_ROOTS"
push_config=${PUSH_CONFIG:-$state/push.env}
push_source="the environment"
if [ -f "$push_config" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    name=${line%%=*} value=${line#*=}
    case "$value" in \"*\") value=${value#\"} value=${value%\"} ;; esac
    case " $push_names " in
      *" $name "*) eval "[ -n \"\${$name:-}\" ] || $name=\$value" ;;
      *) echo "$push_config: unknown setting '$name' (one of: $push_names)" >&2; exit 1 ;;
    esac
  done < "$push_config"
  push_source="the environment and $push_config"
elif [ -n "${PUSH_CONFIG:-}" ]; then
  echo "PUSH_CONFIG=$PUSH_CONFIG: no such file" >&2
  exit 1
fi
for file in ${APNS_KEY_FILE:-} ${FCM_SERVICE_ACCOUNT:-} ${PUSH_TRUST_ROOTS:-}; do
  [ -r "$file" ] || { echo "push: cannot read $file" >&2; exit 1; }
done
apns_given="" apns_missing=""
for name in APNS_KEY_FILE APNS_KEY_ID APNS_TEAM_ID APNS_BUNDLE_ID; do
  if eval "[ -n \"\${$name:-}\" ]"; then apns_given=yes; else apns_missing="$apns_missing $name"; fi
done
if [ -n "$apns_given" ] && [ -n "$apns_missing" ]; then
  echo "push: APNs needs APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID and APNS_BUNDLE_ID; missing:$apns_missing" >&2
  exit 1
fi
push_options="" push_defines=""
if [ -n "$apns_given" ]; then
  push_options="--apns-key-file $APNS_KEY_FILE --apns-key-id $APNS_KEY_ID --apns-team-id $APNS_TEAM_ID \
    --apns-bundle-id $APNS_BUNDLE_ID ${APNS_ENDPOINT:+--apns-endpoint $APNS_ENDPOINT}"
  echo "push: APNs on (key $APNS_KEY_FILE, topic $APNS_BUNDLE_ID.voip, ${APNS_ENDPOINT:-https://api.push.apple.com})"
else
  echo "push: APNs off (APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID, APNS_BUNDLE_ID not set in $push_source)"
fi
if [ -n "${FCM_SERVICE_ACCOUNT:-}" ]; then
  push_options="$push_options --fcm-service-account $FCM_SERVICE_ACCOUNT ${FCM_ENDPOINT:+--fcm-endpoint $FCM_ENDPOINT} \
    ${FCM_TOKEN_ENDPOINT:+--fcm-token-endpoint $FCM_TOKEN_ENDPOINT}"
  echo "push: FCM on (service account $FCM_SERVICE_ACCOUNT, ${FCM_ENDPOINT:-https://fcm.googleapis.com})"
else
  echo "push: FCM off (FCM_SERVICE_ACCOUNT not set in $push_source)"
fi
if [ -n "$push_options" ]; then
  if [ ! -f "$state/push-secret" ]; then
    head -c 32 /dev/urandom | base64 | tr -d '\n/+=' > "$state/push-secret"
    chmod 600 "$state/push-secret"
  fi
  push_options="--managed-push-secret-file $state/push-secret $push_options \
    ${PUSH_TRUST_ROOTS:+--push-trust-roots $PUSH_TRUST_ROOTS}"
  push_defines="yes"
else
  echo "push: off, apps push their devices themselves (app-sent push); the APNs or FCM settings turn it on"
fi

# PostgreSQL: created the first time (initdb, the database, Kamailio's tables from Kamailio's own schema files);
# the registration service creates and migrates its tables itself. Run as postgres when started as root.
db_port=${DB_PORT:-5433}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_postgres=""
[ "$(id -u)" -ne 0 ] || as_postgres="setpriv --reuid=postgres --regid=postgres --init-groups"
if [ ! -f "$state/database-password" ]; then
  head -c 24 /dev/urandom | base64 | tr -d '\n/+=' > "$state/database-password"
  chmod 600 "$state/database-password"
fi
db_password=$(cat "$state/database-password")
if [ ! -d "$state/postgresql/data" ]; then
  mkdir -p "$state/postgresql"
  [ -z "$as_postgres" ] || chown postgres: "$state/postgresql"
  $as_postgres test -w "$state/postgresql" || { echo "the postgres user cannot reach $state/postgresql" >&2; exit 1; }
  # initdb reads the password from a file of the server's user, removed afterwards.
  cp "$state/database-password" "$state/postgresql/password"
  [ -z "$as_postgres" ] || chown postgres: "$state/postgresql/password"
  $as_postgres "$pg_bin/initdb" -D "$state/postgresql/data" -U voiceengine --pwfile="$state/postgresql/password" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C > "$state/postgresql/initdb.log"
  rm "$state/postgresql/password"
fi
$as_postgres "$pg_bin/postgres" -D "$state/postgresql/data" -p "$db_port" -k "$state/postgresql" \
  -c listen_addresses=127.0.0.1 > "$state/postgresql/server.log" 2>&1 &
database=$!
trap 'kill -INT $database 2>/dev/null' EXIT INT TERM
for _ in $(seq 100); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$db_port" && break; sleep 0.2; done
export PGPASSWORD="$db_password"
psql="$pg_bin/psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $db_port -U voiceengine"
if [ -z "$($psql -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'voiceengine'")" ]; then
  $psql -d postgres -c "CREATE DATABASE voiceengine"
  for table in standard usrloc msilo; do $psql -d voiceengine -f "/usr/share/kamailio/postgres/$table-create.sql"; done
fi
unset PGPASSWORD
echo "postgresql: 127.0.0.1:$db_port, database voiceengine, data in $state/postgresql (pid $database)"

secret=$(cat "$state/shared-secret")

# coturn: STUN and TURN for the clients' calls on SERVICE_ADDRESS:TURN_PORT (environment, 3478 by default; relay
# ports TURN_MIN_PORT…TURN_MIN_PORT+99, 49160 by default). It checks the time-limited credentials every registration
# grant carries with the shared secret (use-auth-secret, the same scheme as Kamailio's auth_ephemeral); the
# registration service names it in the grants (--ice-server). Peers on loopback are relayed to only when the
# service itself is on loopback (every client runs here); otherwise a client could reach this machine's loopback
# services through the relay.
turn_port=${TURN_PORT:-3478}
turn_min_port=${TURN_MIN_PORT:-49160}
loopback_peers=""
case "$address" in 127.*|::1) loopback_peers="--allow-loopback-peers" ;; esac
# shellcheck disable=SC2086
/usr/bin/turnserver -n --listening-ip="$address" --listening-port="$turn_port" --relay-ip="$address" \
  --min-port="$turn_min_port" --max-port=$((turn_min_port + 99)) --use-auth-secret --static-auth-secret="$secret" \
  --realm=voiceengine.test $loopback_peers --no-tls --no-dtls --no-cli --no-tcp-relay --fingerprint \
  --log-file="$state/coturn.log" --simple-log --pidfile="$state/coturn.pid" > /dev/null 2>&1 &
coturn=$!
trap 'kill $coturn 2>/dev/null; kill -INT $database 2>/dev/null' EXIT INT TERM
echo "coturn: turn:$address:$turn_port, log $state/coturn.log (pid $coturn)"

# shellcheck disable=SC2086
"$voice_engine" registration-service --listen "$address:$http_port" --applications "$state/applications.json" \
  --database "postgres://voiceengine@127.0.0.1:$db_port/voiceengine" \
  --database-password-file "$state/database-password" --shared-secret-file "$state/shared-secret" \
  --certificate "$state/server.pem" --private-key "$state/server.key" --ice-server "turn:$address:$turn_port" \
  --metrics-listen "127.0.0.1:$metrics_port" $push_options &
registration=$!
trap 'kill $registration $coturn 2>/dev/null; kill -INT $database 2>/dev/null' EXIT INT TERM
echo "registration service: https://$address:$http_port/v1/registrations (pid $registration)"
echo "metrics: http://127.0.0.1:$metrics_port/metrics, http://127.0.0.1:$metrics_port/health, kamailio http://127.0.0.1:$kamailio_metrics_port/metrics"
echo "kamailio: sip:$address:$tls_port;transport=tls (clients), sip:$address:$sip_port (udp, tcp), domain voiceengine.test, state in $state"
echo "clients trust the service's CA: $state/ca.pem"
if [ -n "${NODES:-}" ]; then
  for node in $NODES; do echo "1 $node"; done > "$state/nodes.list"
  echo "kamailio: one node of: $NODES"
fi
/usr/sbin/kamailio -f "$here/kamailio/kamailio.cfg" -DD -E -l "udp:$address:$sip_port" -l "tcp:$address:$sip_port" \
  -l "tls:$address:$tls_port" -A WITH_TLS -A "TLSCFG=\"$state/tls.cfg\"" \
  -A "SECRET=\"$secret\"" -A "DB_URL=\"postgres://voiceengine:$db_password@127.0.0.1:$db_port/voiceengine\"" \
  -A "SELF=\"sip:$address:$sip_port\"" -A "METRICS_PORT=$kamailio_metrics_port" ${GATEWAY:+-A "GATEWAY=\"$GATEWAY\""} ${CONFERENCE:+-A "CONFERENCE=\"$CONFERENCE\""} \
  ${push_defines:+-A "PUSH_GATEWAY=\"https://$address:$http_port/v1/managed-push\""} \
  ${push_defines:+-A "PUSH_SECRET=\"$(cat "$state/push-secret" 2>/dev/null)\"" -A "PUSH_CA=\"$state/ca.pem\""} \
  ${NODES:+-A CLUSTER -A "NODES=\"$state/nodes.list\""} -P "$state/kamailio.pid" -Y "$state" -m "${KAMAILIO_SHM_MB:-256}" -M 8
