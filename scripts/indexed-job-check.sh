# Sourced by scripts/package-check once the .deb is installed in the chroot $root: runs the container of
# deploy/kubernetes/revoke-job.yaml (docs/fleet.md) the way the Job's pods run it, and proves the audit exact.
#
# What a pod is here, from the manifest itself (command, args, env, uid/gid/fsGroup, mounts, exit codes):
#   - its own mount namespace (unshare) over the chroot, with the Job's volumes: the ReadWriteMany claim as a
#     directory of group fsGroup with the setgid bit (what the kubelet makes of it), the plan as a read-only
#     ConfigMap volume (files that are symlinks into ..data, root's, 0644), fresh emptyDirs (2777, group
#     fsGroup) for the state and /tmp;
#   - uid/gid runAsUser/runAsGroup with fsGroup as a supplementary group, env -i with the manifest's env: the
#     admin's token from the "Secret", the API from the "ConfigMap", JOB_COMPLETION_INDEX;
#   - one index killed (kill -9) mid-run, the volume then re-owned as the kubelet's fsGroup does on a
#     remount (group fsGroup, setgid directories, files OR'd with rw-rw----), and the index run again.
# Then `sl-sessions journal verify --plan` over every shard's journal must be exact, the server must list none
# of the sessions, and the exit codes the manifest fails an index on must be the ones the tool gives.
# Needs: root, the chroot of package-check with the package installed, curl and python3 with PyYAML.

job_say() { say "indexed job: $*"; }

check_indexed_job() {
  manifest=deploy/kubernetes/revoke-job.yaml
  py=python3
  [ -x "$HOME/.cache/starline/test-venv/bin/python3" ] && py="$HOME/.cache/starline/test-venv/bin/python3"
  # shellcheck disable=SC2016
  spec=$("$py" - "$manifest" << 'PY'
import shlex, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
job = next(d for d in docs if d["kind"] == "Job")
spec, pod = job["spec"], job["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "revoke")
sc = pod["securityContext"]
env = {e["name"]: e.get("value") for e in c["env"]}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
codes = next(r["onExitCodes"]["values"] for r in spec["podFailurePolicy"]["rules"] if r["action"] == "FailIndex")
q = shlex.quote
print(f"pod_shards={spec['completions']} pod_uid={sc['runAsUser']} pod_gid={sc['runAsGroup']} pod_fsgroup={sc['fsGroup']}")
print("pod_argv=" + q(" ".join(q(a) for a in c["command"] + c["args"])))
print("pod_env=" + q(" ".join(q(f"{k}={v}") for k, v in env.items() if v is not None)))
print(f"pod_campaign={q(env['CAMPAIGN'])} pod_fail_codes={q(' '.join(map(str, codes)))}")
print(f"pod_audit={q(mounts['audit'])} pod_plan={q(mounts['plan'])} pod_state={q(mounts['state'])} pod_tmp={q(mounts['tmp'])}")
PY
  ) || fail "cannot read $manifest"
  eval "$spec"

  # The platform: sl-devserver from the package, an admin signed in with the device flow, carol's sessions.
  in_root sh -c 'sl-devserver --port 0 --auto-approve alice > /tmp/dev.json 2> /tmp/dev.err & echo $! > /tmp/dev.pid'
  for _ in $(seq 100); do [ -s "$root/tmp/dev.json" ] && break; sleep 0.1; done
  base=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["listening"])' "$root/tmp/dev.json") ||
    fail "sl-devserver did not start: $(cat "$root/tmp/dev.err")"
  devtoken=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["devToken"])' "$root/tmp/dev.json")
  dev() { curl -sf -H "X-Dev-Token: $devtoken" -H 'Content-Type: application/json' "$@"; }
  dev -d '{"count":400}' "$base/__dev/users/carol/sessions" > /dev/null || fail "cannot create sessions on $base"
  admin="env HOME=/tmp/admin STARLINE_HOME=/tmp/admin/starline STARLINE_API_BASE_URL=$base"
  # shellcheck disable=SC2086
  in_root $admin sl-login --device > /dev/null 2>&1 || fail "sl-login --device as the admin failed"
  # shellcheck disable=SC2086
  token=$(in_root $admin sl-login token) || fail "sl-login token failed"

  # The plan, as a ConfigMap volume holds it: root's files behind ..data symlinks, mounted read-only.
  configmap=$(mktemp -d "$root/tmp/configmap.XXXXXX")
  stamp="..$(date -u +%Y_%m_%d_%H_%M_%S).123456789"
  mkdir "$configmap/$stamp"
  # shellcheck disable=SC2086
  in_root env STARLINE_TOKEN="$token" STARLINE_API_BASE_URL="$base" sl-sessions list --user carol --jsonl > "$configmap/$stamp/plan.jsonl" ||
    fail "the plan (sl-sessions list --user carol --jsonl) failed"
  [ "$(wc -l < "$configmap/$stamp/plan.jsonl")" -eq 400 ] || fail "the plan has $(wc -l < "$configmap/$stamp/plan.jsonl") lines, not 400"
  # The kubelet's ConfigMap volume: directories anyone may enter, files of defaultMode 0644.
  chmod 0755 "$configmap" "$configmap/$stamp"
  ln -s "$stamp" "$configmap/..data"
  ln -s ..data/plan.jsonl "$configmap/plan.jsonl"
  chmod 0644 "$configmap/$stamp/plan.jsonl"

  # The ReadWriteMany claim: the volume root the kubelet gave group fsGroup and the setgid bit.
  audit=$(mktemp -d "$root/tmp/audit.XXXXXX")
  chgrp "$pod_fsgroup" "$audit"
  chmod 2775 "$audit"

  # run_pod INDEX [ENV…]: one pod of the Job, in the foreground; its exit status is the pod's.
  run_pod() {
    index=$1
    shift
    state=$(mktemp -d "$root/tmp/emptydir.XXXXXX")
    tmpdir=$(mktemp -d "$root/tmp/emptydir.XXXXXX")
    chgrp "$pod_fsgroup" "$state" "$tmpdir"
    chmod 2777 "$state" "$tmpdir"
    for d in "$pod_audit" "$pod_plan" "$pod_state" "$pod_tmp"; do mkdir -p "$root$d"; done
    # shellcheck disable=SC2086
    unshare --mount --propagation private sh -c '
      r=$1; shift
      mount --bind "$2" "$r$3" && mount --bind "$4" "$r$5" && mount -o remount,ro,bind "$r$5" &&
        mount --bind "$6" "$r$7" && mount --bind "$8" "$r$9" || exit 99
      shift 9
      ids=$1 groups=$2
      shift 2
      exec chroot --userspec="$ids" --groups="$groups" "$r" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"
    ' pod "$root" x "$audit" "$pod_audit" "$configmap" "$pod_plan" "$state" "$pod_state" "$tmpdir" "$pod_tmp" \
      "$pod_uid:$pod_gid" "$pod_fsgroup" \
      $pod_env STARLINE_TOKEN="$token" STARLINE_API_BASE_URL="$base" JOB_COMPLETION_INDEX="$index" "$@" \
      sh -c 'eval "exec $POD_ARGV"' > "$root/tmp/pod-$index.out" 2> "$root/tmp/pod-$index.err"
    rc=$?
    rm -rf "$state" "$tmpdir"
    return $rc
  }
  journal="$audit/$pod_campaign/shard-3.journal"

  # Index 3, slowed by the server, is killed mid-run (a node lost); its retry resumes its journal.
  dev -d '{"route":"DELETE /api/admin/users/*/sessions/*","delayMs":150}' "$base/__dev/faults" > /dev/null
  (POD_ARGV=$pod_argv run_pod 3 POD_ARGV="$pod_argv") &
  # Killed once it has finished a few items (the journal also holds the header and the planned records).
  for _ in $(seq 300); do [ -f "$journal" ] && [ "$(grep -c '"status":"revoked"' "$journal")" -ge 5 ] && break; sleep 0.1; done
  [ -f "$journal" ] || fail "index 3 wrote no journal: $(cat "$root/tmp/pod-3.err")"
  pkill -9 -f "shard-3.journal" || fail "index 3 was not running to be killed"
  wait || true
  dev -X DELETE "$base/__dev/faults" > /dev/null
  killed=$(grep -c '"status":"revoked"' "$journal" || true)
  [ "$killed" -ge 5 ] || fail "index 3 was killed before it revoked anything"
  # The kubelet re-owns the volume on the retried pod's mount (fsGroupChangePolicy Always, or a root mismatch).
  chgrp -R "$pod_fsgroup" "$audit"
  chmod -R g+rw "$audit"
  find "$audit" -type d -exec chmod g+s {} +

  # Every index (3 again: its retry), all at once, as parallelism: 8 runs them.
  pids=""
  i=0
  while [ "$i" -lt "$pod_shards" ]; do
    (run_pod "$i" POD_ARGV="$pod_argv") &
    pids="$pids $!"
    i=$((i + 1))
  done
  i=0
  for p in $pids; do
    wait "$p" || fail "index $i exited $? (expected 0): $(tail -n 3 "$root/tmp/pod-$i.err" "$root/tmp/pod-$i.out")"
    i=$((i + 1))
  done
  grep -q '"fromJournal":[1-9]' "$root/tmp/pod-3.out" || fail "the retried index 3 did not resume its journal: $(tail -n 1 "$root/tmp/pod-3.out")"

  # The audit: every planned session finished exactly once across the shards' journals; the server agrees.
  in_root sl-sessions journal verify --plan "/tmp/$(basename "$configmap")/plan.jsonl" \
    $(cd "$root" && ls "tmp/$(basename "$audit")/$pod_campaign/"shard-*.journal | sed 's|^|/|') > "$root/tmp/verify.out" ||
    fail "journal verify is not exact: $(tail -n 5 "$root/tmp/verify.out")"
  # shellcheck disable=SC2086
  left=$(in_root env STARLINE_TOKEN="$token" STARLINE_API_BASE_URL="$base" sl-sessions list --user carol --jsonl | wc -l)
  [ "$left" = 0 ] || fail "$left of carol's sessions are still listed after the campaign"

  # The exit codes the manifest fails an index on at once are what the tool gives where no retry helps.
  rc=0
  run_pod 0 POD_ARGV="$pod_argv" STARLINE_TOKEN= || rc=$?
  echo " $pod_fail_codes " | grep -q " $rc " || fail "without a token the pod exited $rc, not one of the FailIndex codes ($pod_fail_codes)"
  # A group-writable journal outside a setgid directory of the pod's group (the volume not re-owned as fsGroup does).
  chmod g+w "$audit/$pod_campaign/shard-1.journal"
  chmod g-s "$audit/$pod_campaign"
  rc=0
  run_pod 1 POD_ARGV="$pod_argv" || rc=$?
  echo " $pod_fail_codes " | grep -q " $rc " ||
    fail "with a group-writable journal in a directory that is not setgid the pod exited $rc, not one of ($pod_fail_codes)"

  in_root sh -c 'kill "$(cat /tmp/dev.pid)"'
  rm -rf "$configmap" "$audit"
  job_say "$pod_shards indexes as uid $pod_uid (fsGroup $pod_fsgroup) from the manifest; index 3 killed after $killed items and resumed; journal verify exact; none of carol's sessions left; FailIndex codes hold"
}
