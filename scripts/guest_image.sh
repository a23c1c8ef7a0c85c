#!/usr/bin/env bash
# Builds the real-guest image (once per machine) and prints the directory that holds it:
#   vmlinuz      Debian's cloud kernel (linux-image-cloud-amd64, unpacked, not installed)
#   initrd.img   busybox init + virtio modules + Debian's qemu-ga with its libraries
#   disk.qcow2   a small ext4 disk (the guest mounts it at /data) used as the backing file of each VM's disk
# Everything comes from Debian packages: QEMU and the tools are installed with apt; the kernel and busybox
# are fetched with `apt-get download` and unpacked here, so the host's own boot setup is never touched.
# The cache lives outside the work tree (CI clones fresh), keyed by a hash of this script: change the guest
# here and the next run builds a new image.
# Usage: scripts/guest_image.sh   (the build's progress goes to stderr; stdout is the directory only)
set -euo pipefail
source "$(dirname "$0")/tools.sh"

# Host commands the image build and the VMs need, with the Debian package of each.
HOST_PACKAGES=(
  "qemu-system-x86_64 qemu-system-x86"
  "qemu-img qemu-utils"
  "qemu-ga qemu-guest-agent"
  "cpio cpio"
  "mkfs.ext4 e2fsprogs"
)
# The kernel modules the guest loads, in dependency order (the unpacked kernel has no modules.dep).
GUEST_MODULES=(
  virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
  virtio_console failover net_failover virtio_net virtio_blk button evdev
)

install_host_packages() {
  local entry cmd pkg missing=()
  for entry in "${HOST_PACKAGES[@]}"; do
    read -r cmd pkg <<<"$entry"
    command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || [ -x "/sbin/$cmd" ] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages for the real guests: ${missing[*]}"
  apt_lists_present || apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

apt_lists_present() {
  apt-cache policy linux-image-cloud-amd64 2>/dev/null | grep -q 'Candidate: [0-9]'
}

# download_deb <package> <dir>: the package's .deb unpacked into <dir> (apt's own download, no install).
download_deb() {
  local pkg=$1 dir=$2 work
  work=$(mktemp -d)
  chmod 777 "$work" # apt's sandbox user writes the download here
  (cd "$work" && apt-get download -qq "$pkg" >&2)
  dpkg-deb -x "$work"/*.deb "$dir"
  rm -rf "$work"
}

# The kernel package linux-image-cloud-amd64 points at (e.g. linux-image-6.1.0-57-cloud-amd64).
kernel_package() {
  apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}'
}

install_host_packages
install_host_packages # again: installing qemu-system-x86 can remove a newer qemu-utils it conflicts with

cache_root="${PROXMOX_SWAMP_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/proxmox-swamp-guest}"
key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
out="$cache_root/$key"
if [ -f "$out/ready" ]; then echo "$out"; exit 0; fi

mkdir -p "$cache_root"
exec 8>"$cache_root/.build.lock" && flock 8 # one build at a time; a second caller waits, then reuses it
if [ -f "$out/ready" ]; then echo "$out"; exit 0; fi

say "building the real-guest image into $out (once per machine)"
started=$SECONDS
apt_lists_present || apt-get update -qq >&2
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
pkgs="$build/pkgs" root="$build/root"
mkdir -p "$pkgs" "$root"
kpkg=$(kernel_package)
[ -n "$kpkg" ] || { echo "no kernel package behind linux-image-cloud-amd64 (apt-get update?)" >&2; exit 1; }
download_deb "$kpkg" "$pkgs"
download_deb busybox-static "$pkgs"
kver=${kpkg#linux-image-}

# --- the initramfs tree ---
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc/init.d,etc/acpi/PWRF,proc,sys,dev,run,tmp,data,var,root}
ln -s ../run "$root/var/run"
cp "$pkgs/bin/busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list-full); do
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
ln -s bin/busybox "$root/init" # the kernel runs /init; busybox reads its name and becomes init

# qemu-ga and every library it links (same Debian release as the guest userland needs nothing else).
qga=$(command -v qemu-ga || echo /usr/sbin/qemu-ga)
cp "$qga" "$root/usr/sbin/qemu-ga"
for lib in $(ldd "$qga" | grep -Eo '/[^ ]+\.so[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

moddir="$root/lib/modules/$kver"
mkdir -p "$moddir"
for m in "${GUEST_MODULES[@]}"; do
  f=$(find "$pkgs/lib/modules/$kver" -name "$m.ko" -print -quit)
  [ -n "$f" ] || { echo "kernel module $m.ko not in $kpkg" >&2; exit 1; }
  # Each module's own `depends=` must name modules loaded before it (a wrong order fails at boot).
  for dep in $(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | tr ',' ' '); do
    [ -e "$moddir/$dep.ko" ] || { echo "module $m needs $dep first: fix GUEST_MODULES" >&2; exit 1; }
  done
  cp "$f" "$moddir/"
done

cat >"$root/etc/inittab" <<'EOF'
::sysinit:/etc/init.d/rcS
::respawn:/etc/init.d/agent
::respawn:/sbin/acpid -f -c /etc/acpi -l /run/acpid.log
::ctrlaltdel:/sbin/reboot
::shutdown:/etc/init.d/rcK
EOF

printf '%s\n' "${GUEST_MODULES[@]}" >"$root/etc/modules"
cat >"$root/etc/init.d/rcS" <<'EOF'
#!/bin/sh
# Boot: mounts, modules, the agent's port name, DHCP, the data disk. Runs before the agent starts.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mkdir -p /dev/pts /run/qga && mount -t devpts devpts /dev/pts
kver=$(uname -r)
while read -r m; do insmod "/lib/modules/$kver/$m.ko" || echo "insmod $m failed" >/dev/console; done </etc/modules
hostname "$(sed -n 's/.*hostname=\([^ ]*\).*/\1/p' /proc/cmdline)"
# No udev: name the virtio-serial ports the way udev would (/dev/virtio-ports/<name>).
mkdir -p /dev/virtio-ports
for p in /sys/class/virtio-ports/*; do
  [ -f "$p/name" ] && ln -sf "/dev/${p##*/}" "/dev/virtio-ports/$(cat "$p/name")"
done
ip link set lo up
ip link set eth0 up
# IPv4 from QEMU's user network (slirp DHCP); IPv6 arrives by SLAAC from slirp's router advertisements.
udhcpc -i eth0 -s /etc/udhcpc.sh -q -n -t 10 -T 1 >/dev/null 2>&1
[ -b /dev/vda ] && mount -t ext4 /dev/vda /data
echo "boot $(cat /proc/sys/kernel/random/boot_id)" >/dev/console
EOF

cat >"$root/etc/init.d/agent" <<'EOF'
#!/bin/sh
# The guest agent on its virtio-serial port. Kept down, so that it never answers, for a boot with
# `qga=off` on the kernel command line (an agent enabled in the config but not running in the guest),
# or from inside the guest until the next boot by creating /run/qga.off.
if grep -qw qga=off /proc/cmdline || [ -e /run/qga.off ]; then exec sleep 100000; fi
exec /usr/sbin/qemu-ga -m virtio-serial -p /dev/virtio-ports/org.qemu.guest_agent.0 -t /run/qga
EOF

cat >"$root/etc/init.d/rcK" <<'EOF'
#!/bin/sh
# Shutdown: flush and unmount the data disk before the power goes.
sync
umount /data 2>/dev/null
EOF

cat >"$root/etc/udhcpc.sh" <<'EOF'
#!/bin/sh
# udhcpc's hook: put the lease on the interface.
case "$1" in
  bound|renew)
    ip addr flush dev "$interface" scope global
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    : >/etc/resolv.conf
    for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done
    ;;
  deconfig) ip addr flush dev "$interface" scope global ;;
esac
exit 0
EOF

# qemu-ga's guest-shutdown runs `/sbin/shutdown -P|-H|-r +0 "hypervisor initiated shutdown"` (qga/commands-posix.c).
cat >"$root/sbin/shutdown" <<'EOF'
#!/bin/sh
echo "shutdown: asked by the guest agent ($*)" >/dev/console
case " $* " in
  *" -r "*) exec reboot ;;
  *" -H "*) exec halt ;;
  *) exec poweroff ;;
esac
EOF
# ACPI power button (QMP system_powerdown): busybox acpid runs /etc/acpi/PWRF/00000080.
printf '#!/bin/sh\necho "acpi: power button pressed" >/dev/console\nexec poweroff\n' >"$root/etc/acpi/PWRF/00000080"
cat >"$root/etc/os-release" <<EOF
PRETTY_NAME="proxmox-swamp test guest (busybox, Debian kernel $kver)"
NAME="proxmox-swamp-guest"
ID=proxmox-swamp-guest
VERSION_ID="$key"
EOF
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
chmod 755 "$root"/etc/init.d/* "$root/etc/udhcpc.sh" "$root/sbin/shutdown" "$root/etc/acpi/PWRF/00000080"

mkdir -p "$out.tmp"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp/initrd.img"
cp "$pkgs/boot/vmlinuz-$kver" "$out.tmp/vmlinuz"
# The data disk: ext4 made here (mkfs.ext4 on a raw file), stored as qcow2 so each VM gets a thin overlay.
truncate -s 64M "$build/disk.raw"
mkfs.ext4 -q -F -L data "$build/disk.raw"
qemu-img convert -q -f raw -O qcow2 "$build/disk.raw" "$out.tmp/disk.qcow2"
echo "$kpkg" >"$out.tmp/kernel-package"
rm -rf "$out" && mv "$out.tmp" "$out" && touch "$out/ready"
# Images of earlier versions of this script are not used again (kept for two hours: a work tree still
# on an older version may be booting one right now).
find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -mmin +120 -exec rm -rf {} +
say "real-guest image ready in $((SECONDS - started))s: $(du -sh "$out" | cut -f1) ($kpkg)"
echo "$out"
