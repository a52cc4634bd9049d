#!/bin/sh
# Starts the calling client's service on loopback: PostgreSQL, the registration service (voice-engine
# registration-service, HTTPS) and Kamailio with Services/kamailio/kamailio.cfg (SIP over TLS for clients; UDP and
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
# GATEWAY and CONFERENCE (environment, SIP URIs) say where Kamailio sends phone-number and conference calls
# (defaults in kamailio.cfg); DB_PORT (environment) PostgreSQL's port, 5433 by default. Stops all on Ctrl-C.
set -eu
state=$1 sip_port=$2 http_port=$3 voice_engine=$4
tls_port=${SIP_TLS_PORT:-$((sip_port + 1))}
names=${SERVICE_NAMES:-DNS:localhost,DNS:voiceengine.test,IP:127.0.0.1,IP:::1}
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

# Managed push (the service pushes through APNs and FCM) when APNS_KEY_FILE (with APNS_KEY_ID, APNS_TEAM_ID,
# APNS_BUNDLE_ID; APNS_ENDPOINT for the sandbox) or FCM_SERVICE_ACCOUNT (FCM_ENDPOINT, FCM_TOKEN_ENDPOINT) is set in
# the environment; PUSH_TRUST_ROOTS names the CAs of the push services when they are not the system's. Kamailio
# then posts kept calls and stored messages to the registration service with the secret in STATE_DIR/push-secret.
push_options="" push_defines=""
if [ -n "${APNS_KEY_FILE:-}${FCM_SERVICE_ACCOUNT:-}" ]; then
  if [ ! -f "$state/push-secret" ]; then
    head -c 32 /dev/urandom | base64 | tr -d '\n/+=' > "$state/push-secret"
    chmod 600 "$state/push-secret"
  fi
  push_options="--managed-push-secret-file $state/push-secret"
  [ -z "${APNS_KEY_FILE:-}" ] || push_options="$push_options --apns-key-file $APNS_KEY_FILE --apns-key-id $APNS_KEY_ID \
    --apns-team-id $APNS_TEAM_ID --apns-bundle-id $APNS_BUNDLE_ID ${APNS_ENDPOINT:+--apns-endpoint $APNS_ENDPOINT}"
  [ -z "${FCM_SERVICE_ACCOUNT:-}" ] || push_options="$push_options --fcm-service-account $FCM_SERVICE_ACCOUNT \
    ${FCM_ENDPOINT:+--fcm-endpoint $FCM_ENDPOINT} ${FCM_TOKEN_ENDPOINT:+--fcm-token-endpoint $FCM_TOKEN_ENDPOINT}"
  push_options="$push_options ${PUSH_TRUST_ROOTS:+--push-trust-roots $PUSH_TRUST_ROOTS}"
  push_defines="yes"
fi

secret=$(cat "$state/shared-secret")
# shellcheck disable=SC2086
"$voice_engine" registration-service --listen "127.0.0.1:$http_port" --applications "$state/applications.json" \
  --database "postgres://voiceengine@127.0.0.1:$db_port/voiceengine" \
  --database-password-file "$state/database-password" --shared-secret-file "$state/shared-secret" \
  --certificate "$state/server.pem" --private-key "$state/server.key" $push_options &
registration=$!
trap 'kill $registration 2>/dev/null; kill -INT $database 2>/dev/null' EXIT INT TERM
echo "registration service: https://127.0.0.1:$http_port/v1/registrations (pid $registration)"
echo "kamailio: sip:127.0.0.1:$tls_port;transport=tls (clients), sip:127.0.0.1:$sip_port (udp, tcp), domain voiceengine.test, state in $state"
echo "clients trust the service's CA: $state/ca.pem"
/usr/sbin/kamailio -f "$here/kamailio/kamailio.cfg" -DD -E -l "udp:127.0.0.1:$sip_port" -l "tcp:127.0.0.1:$sip_port" \
  -l "tls:127.0.0.1:$tls_port" -A WITH_TLS -A "TLSCFG=\"$state/tls.cfg\"" \
  -A "SECRET=\"$secret\"" -A "DB_URL=\"postgres://voiceengine:$db_password@127.0.0.1:$db_port/voiceengine\"" \
  -A "SELF=\"sip:127.0.0.1:$sip_port\"" ${GATEWAY:+-A "GATEWAY=\"$GATEWAY\""} ${CONFERENCE:+-A "CONFERENCE=\"$CONFERENCE\""} \
  ${push_defines:+-A "PUSH_GATEWAY=\"https://127.0.0.1:$http_port/v1/managed-push\""} \
  ${push_defines:+-A "PUSH_SECRET=\"$(cat "$state/push-secret" 2>/dev/null)\"" -A "PUSH_CA=\"$state/ca.pem\""} \
  -P "$state/kamailio.pid" -Y "$state" -m 32 -M 8
