# Throwaway Debian 12 chroots for scripts/package-check and scripts/fresh-debian-check (sourced, POSIX sh).
# A base (debootstrap --variant=minbase plus some packages) is built once and kept as a tar in the cache,
# rebuilt when a month old; every run unpacks a fresh root from it and removes it afterwards.
# Needs root (chroot, mount) and, to build a base or fetch packages, the Debian mirror. The network steps are
# retried: a mirror hiccup should cost a minute, not a CI run.
# The caller defines fail() and say() and sets `tag` (the prefix of its messages).

chroot_cache=${STARLINE_CHROOT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/starline/debian12}
chroot_mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=""

# retry DESCRIPTION LOG command…: up to four attempts (waits of 10, 30 and 60 s between them), the output
# appended to LOG; the last 20 lines of LOG are shown when every attempt failed.
retry() {
  what=$1
  rlog=$2
  shift 2
  for wait in 10 30 60 stop; do
    "$@" >> "$rlog" 2>&1 && return 0
    [ "$wait" = stop ] && break
    say "$what failed; again in $wait s"
    sleep "$wait"
  done
  tail -n 20 "$rlog" >&2
  fail "$what failed four times (see $rlog)"
}

chroot_sources() {
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
    "$chroot_mirror" "$chroot_mirror" > "$1/etc/apt/sources.list"
}

# in_root command…: runs in the chroot with a clean environment (CHROOT_ENV adds NAME=value words).
in_root() {
  # shellcheck disable=SC2086
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive ${CHROOT_ENV:-} "$@"
}

# chroot_mount [full]: /proc and the shared .deb cache; `full` adds /sys and /dev (with /dev/pts and /dev/shm),
# as a build and test run need them. Bind mounts are made slaves, so nothing mounted below them reaches the host.
chroot_mount() {
  mkdir -p "$chroot_cache/archives/partial"
  mount -t proc proc "$root/proc"
  mount --bind "$chroot_cache/archives" "$root/var/cache/apt/archives"
  if [ "${1:-}" = full ]; then
    mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
    mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # debootstrap writes no /etc/hosts; an installed Debian (and any container image) has one naming localhost,
  # which programs expect (chromedriver reaches the browser's DevTools as ws://localhost:…).
  [ -e "$root/etc/hosts" ] ||
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
}

# Unmounts everything below $root, deepest first, then removes it (never across a mount that would not go).
chroot_cleanup() {
  [ -n "$root" ] && [ -d "$root" ] || return 0
  # A process still running in the root (a server a failed step left) would hold its mounts.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2> /dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2> /dev/null
  done
  awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount "$m" 2> /dev/null || umount -l "$m" || true
  done
  if awk -v r="$root/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    echo "$tag: $root still has mounts; not removing it" >&2
  else
    rm -rf --one-file-system "$root"
  fi
  root=""
}

# chroot_base NAME "PACKAGES": the path of the base tar NAME.tar (minbase plus PACKAGES), built when missing or
# a month old.
chroot_base() {
  base=$chroot_cache/$1.tar
  mkdir -p "$chroot_cache"
  if [ -f "$base" ] && [ -z "$(find "$base" -mtime +30)" ]; then
    say "using the Debian 12 base $base"
    return 0
  fi
  say "building the Debian 12 base $1 with debootstrap (network; a few minutes)"
  blog=$chroot_cache/$1.log
  : > "$blog"
  root=$(mktemp -d "$chroot_cache/root.XXXXXX")
  # debootstrap refuses a target it half-filled: each attempt starts from an empty directory.
  retry "debootstrap" "$blog" sh -c 'rm -rf "$1" && mkdir "$1" && debootstrap --variant=minbase bookworm "$1" "$2"' \
    debootstrap "$root" "$chroot_mirror"
  chroot_sources "$root"
  chroot_mount
  retry "apt-get update (base $1)" "$blog" in_root apt-get update -q
  # shellcheck disable=SC2086
  retry "apt-get install (base $1)" "$blog" in_root apt-get install -y -q --no-install-recommends $2
  # The .debs stay in the shared cache; only the root's own copy of the archive is cleaned.
  umount "$root/var/cache/apt/archives"
  in_root apt-get clean >> "$blog" 2>&1
  umount "$root/proc"
  tar --numeric-owner -C "$root" -cf "$base.tmp" . || fail "could not write $base"
  mv "$base.tmp" "$base"
  chroot_cleanup
}

# chroot_fresh NAME [full]: a new root unpacked from the base NAME, mounted (see chroot_mount), in $root.
chroot_fresh() {
  root=$(mktemp -d "$chroot_cache/root.XXXXXX")
  tar --numeric-owner -C "$root" -xf "$chroot_cache/$1.tar" || fail "could not unpack $chroot_cache/$1.tar"
  chmod 0755 "$root"
  chroot_mount "${2:-}"
  in_root chown _apt:root /var/cache/apt/archives/partial 2> /dev/null || true
}
