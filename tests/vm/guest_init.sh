#!/bin/sh
# The guest's init (PID 1), run from the host's read-only root that the initramfs mounted over virtio-9p.
# It makes the few places a system writes into tmpfs, binds the unpacked kernel's module tree over
# /lib/modules, loads the drivers of the emulated devices, mounts the test's exchange folder, starts sshd
# when asked, and then serves the host's commands on the second serial port (tests/vm/guest.py):
#   host: "run ID\n"  ->  sh /run/xchg/ID.sh >ID.out 2>ID.err in the background;  guest: "done ID RC\n"
#   host: "poweroff\n" -> the guest powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/home LANG=C.UTF-8 TERM=dumb
umask 022
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/pts /dev/shm 2>/dev/null
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm

arg() { for w in $(cat /proc/cmdline); do case "$w" in "$1="*) echo "${w#*=}";; esac; done; }
checkout=$(arg ptcheckout)
modules=$(arg ptmodules)

mount -t tmpfs run /run
mkdir -p /run/xchg /run/sshd /run/checkout /run/home
# /tmp and /var/tmp become the guest's own (HOME is /run/home: /root may hold the host's Python); a checkout under /tmp stays visible at its own path
case "$checkout" in /tmp/*) mount --bind "$checkout" /run/checkout;; esac
mount -t tmpfs tmp /tmp
case "$checkout" in /tmp/*) mkdir -p "$checkout"; mount --bind /run/checkout "$checkout";; esac
mount -t tmpfs vartmp /var/tmp
mount -t tmpfs mnt /mnt
mount -t tmpfs log /var/log

# The unpacked kernel's modules.  The host's root is read-only and may have no /lib/modules, so modprobe
# looks in /run/kmod (-d); the kernel's own requests (crypto algorithms by alias) go through the same wrapper.
mkdir -p /run/kmod/lib/modules
ln -s "$modules" "/run/kmod/lib/modules/$(uname -r)"
printf '#!/bin/sh\nexec /sbin/modprobe -d /run/kmod "$@"\n' > /run/kmod/modprobe
chmod 755 /run/kmod/modprobe
echo /run/kmod/modprobe > /proc/sys/kernel/modprobe
for m in nvme ahci sd_mod ext4 virtio_net; do /run/kmod/modprobe "$m"; done
export PATH="/run/kmod:$PATH"

mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 xchg /run/xchg
hostname guest
ip link set lo up
if ip link show eth0 >/dev/null 2>&1; then
  ip link set eth0 up
  ip addr add 10.0.2.15/24 dev eth0
  ip route add default via 10.0.2.2
fi
if [ -f /run/xchg/sshd_config ]; then
  /usr/sbin/sshd -f /run/xchg/sshd_config -E /run/xchg/sshd.log
fi
# block devices appear with udev nowhere: wait for the NVMe namespaces the kernel is still probing
i=0
while [ $i -lt 50 ] && [ -n "$(arg ptwait)" ] && [ ! -e "/dev/$(arg ptwait)" ]; do sleep 0.1; i=$((i + 1)); done

# the control line stays open: a serial port nobody holds open drops what arrives
exec 3<>/dev/ttyS1
stty -F /dev/ttyS1 raw -echo
cd /run/xchg
echo "ready" >&3
while read -r verb id <&3; do
  case "$verb" in
    run)
      case "$id" in *[!0-9]*|'') continue;; esac
      ( sh "/run/xchg/$id.sh" > "/run/xchg/$id.out" 2> "/run/xchg/$id.err" < /dev/null 3>&-
        echo "done $id $?" >&3 ) &
      ;;
    poweroff)
      sync
      poweroff -f
      ;;
  esac
done
poweroff -f
