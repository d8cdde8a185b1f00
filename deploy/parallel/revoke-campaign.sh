#!/bin/sh
# docs/fleet.md, "GNU parallel": one revocation campaign in N shards across hosts, from the control machine.
#   C=idle-90d-2026-12 HOSTS=4/admin@host1,4/admin@host2 sh revoke-campaign.sh
# Rerun it unchanged (the same C) after a failure, with the same hosts or others: only the shards that did not
# finish run again, each resuming its own journal wherever it lands. A new campaign gets a new C.
#   C      the campaign: names the joblog, the journals and the runs' --reason (required)
#   HOSTS  the hosts, as parallel -S takes them (required)
#   N      shards (8); PLAN the plan, sl-sessions list … --jsonl output (plan.jsonl)
# Every host needs rsync and sl-sessions on its non-interactive PATH and a signed-in admin (sl-login there);
# STARLINE_API_BASE_URL, when set here, is passed on (--env). STARLINE_TOKEN is never passed: it would be on
# the remote command line, which every user of that host can read.
set -eu
: "${C:?name the campaign, e.g. C=idle-90d-$(date +%F)}"
: "${HOSTS:?name the hosts as parallel -S takes them, e.g. HOSTS=4/admin@host1,4/admin@host2}"
N=${N:-8}
PLAN=${PLAN:-plan.jsonl}
env=""
[ -z "${STARLINE_API_BASE_URL:-}" ] || env="--env STARLINE_API_BASE_URL"
# Checked before anything runs: a host without rsync, the tool or a sign-in fails here, not shard by shard.
# shellcheck disable=SC2086
parallel --nonall -S "$HOSTS" $env \
  'command -v rsync > /dev/null && command -v sl-sessions > /dev/null && sl-login status > /dev/null' ||
  { echo "revoke-campaign: a host is not ready (rsync and sl-sessions on PATH, sl-login status)" >&2; exit 2; }
# One journal per shard, kept here: each job takes its shard's journal to the host that runs it and brings it
# back (also when it fails), so a rerun anywhere resumes it and no attempt's records are lost.
k=0
while [ "$k" -lt "$N" ]; do
  [ -e "$C.shard-$k.journal" ] || (umask 077 && : > "$C.shard-$k.journal")
  k=$((k + 1))
done
# The plan goes once to each host (--basefile); --cleanup removes what was sent and returned from the hosts.
# shellcheck disable=SC2086
seq 0 $((N - 1)) | parallel --joblog "$C.joblog" --resume-failed -S "$HOSTS" $env \
  --basefile "$PLAN" --transferfile "$C.shard-{}.journal" --return "$C.shard-{}.journal" --cleanup \
  "sl-sessions revoke --shard {}/$N --journal $C.shard-{}.journal --resume --reason $C - < $PLAN > /dev/null"
sl-sessions journal verify "$C".shard-*.journal > "$C.verify.jsonl"
echo "revoke-campaign: $C: every planned item done exactly once ($C.verify.jsonl)" >&2
