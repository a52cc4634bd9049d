#!/bin/sh
# Every call type of the calling client end to end, on loopback: the service (Services/run-service.sh), baresip
# standing in for a SIP peer and the phone gateway (one account each), the real conference server
# (`voice-engine conference-server` on BARESIP_PORT+1, media ports BARESIP_PORT+30…+49), and two softphones
# (`voice-engine phone`): bob answers by himself, alice calls bob, baresip's SIP address (with custom headers), a
# phone number and a conference room, hangs up each after a few seconds, messages bob, then a summary.
#   Services/demo-calls.sh STATE_DIR SIP_PORT HTTP_PORT BARESIP_PORT VOICE_ENGINE_BINARY
# Devices are null (no sound card needed); logs stay in STATE_DIR/demo-calls.
set -eu
state=$1 sip_port=$2 http_port=$3 peer_port=$4 voice_engine=$5
tls_port=${SIP_TLS_PORT:-$((sip_port + 1))}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$state/demo-calls"
state=$(cd "$state" && pwd)
logs=$state/demo-calls
pids=""
cleanup() {
  # Kamailio runs in the foreground of run-service.sh, which stops the registration service when it ends.
  [ -f "$state/kamailio.pid" ] && kill "$(cat "$state/kamailio.pid")" 2>/dev/null || true
  for p in $pids; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

conference_port=$((peer_port + 1))
"$voice_engine" conference-server --bind "127.0.0.1:$conference_port" \
  --rtp-ports "$((peer_port + 30))-$((peer_port + 49))" --stats-dir "$logs/rooms" > "$logs/conference-server.log" 2>&1 &
pids="$pids $!"

SIP_TLS_PORT=$tls_port GATEWAY="sip:127.0.0.1:$peer_port" CONFERENCE="sip:127.0.0.1:$conference_port" \
  "$here/run-service.sh" "$state" "$sip_port" "$http_port" "$voice_engine" > "$logs/service.log" 2>&1 &
pids="$pids $!"

mkdir -p "$logs/baresip"
cat > "$logs/baresip/config" <<CONFIG
poll_method epoll
net_interface 127.0.0.1
sip_listen 127.0.0.1:$peer_port
audio_source ausine,440
audio_player alsa,null
module_path /usr/lib/baresip/modules
module opus.so
module srtp.so
module ausine.so
module alsa.so
module_app account.so
module_app menu.so
CONFIG
: > "$logs/baresip/accounts"
for user in b +46701234567; do
  echo "<sip:$user@127.0.0.1:$peer_port>;regint=0;mediaenc=srtp-mand;audio_codecs=opus;answermode=auto" >> "$logs/baresip/accounts"
done
baresip -f "$logs/baresip" -s > "$logs/baresip.log" 2>&1 &
pids="$pids $!"

printf 'demo-application-secret\n' > "$logs/secret"
sleep 3
phone() { "$voice_engine" phone --server 127.0.0.1 --sip-port "$tls_port" --registration-port "$http_port" \
  --ca-file "$state/ca.pem" \
  --application-key demo-application-key --secret-file "$logs/secret" --mic null --speaker null --rate 16000 "$@"; }

# bob: answers every call after 1 s, until his stdin (a FIFO this script holds open) ends.
rm -f "$logs/bob.in"
mkfifo "$logs/bob.in"
phone --user bob --auto-answer 1 < "$logs/bob.in" > "$logs/bob.log" 2> "$logs/bob.err" &
bob=$!
exec 3> "$logs/bob.in"
sleep 2
{
  sleep 1
  echo "call bob X-Demo=app-to-app"; sleep 5; echo hangup; sleep 1
  echo "call-sip b@127.0.0.1:$peer_port X-Demo=app-to-sip"; sleep 4; echo hangup; sleep 1
  echo "call-number +46701234567"; sleep 4; echo hangup; sleep 1
  echo "call-conference demo"; sleep 4; echo hangup; sleep 1
  echo "message bob hello from alice"; sleep 2
  echo quit
} | phone --user alice > "$logs/alice.log" 2> "$logs/alice.err" || true

echo quit >&3
exec 3>&-
wait "$bob" || true
echo "alice's events:"; sed 's/^/  /' "$logs/alice.log"
echo "bob's events:"; sed 's/^/  /' "$logs/bob.log"
echo
echo "summary:"
ok=0
for n in 1 2 3 4; do
  what=$(sed -n "s/^call $n: outgoing \(.*\)/\1/p" "$logs/alice.log" | head -1)
  if grep -q "^call $n: established" "$logs/alice.log" && grep -q "^call $n: ended (localHangup" "$logs/alice.log"; then
    echo "  call $n ($what): established, hung up"; ok=$((ok + 1))
  else
    echo "  call $n ($what): FAILED ($(grep "^call $n: ended" "$logs/alice.log" || echo 'no end'))"
  fi
done
if grep -q "messageDelivered" "$logs/alice.log" && grep -q "message from alice: hello from alice" "$logs/bob.log"; then
  echo "  message alice → bob: delivered"; ok=$((ok + 1))
else
  echo "  message alice → bob: FAILED"
fi
grep -q "X-Demo: app-to-sip" "$logs/baresip.log" && echo "  baresip saw the custom header X-Demo: app-to-sip" && ok=$((ok + 1)) \
  || echo "  baresip did not see the custom header"
if [ -f "$logs/rooms/demo.json" ] && grep -q '"name" : "sip:alice@' "$logs/rooms/demo.json"; then
  echo "  the conference server's report of room demo names alice:"; sed -n 's/^\(  [^ ]\)/    \1/p' "$logs/conference-server.log" | head -3
  ok=$((ok + 1))
else
  echo "  the conference server wrote no report of room demo naming alice"
fi
echo "$ok of 7 passed (logs in $logs)"
[ "$ok" -eq 7 ]
