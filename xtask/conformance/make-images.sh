#!/bin/bash
# Offline substitutes for runc's tests/integration/get-images.sh downloads.
# busybox-amd64.tar.xz: Debian busybox-static 1:1.35.0-4+deb12u1 laid out like docker-library busybox (glibc):
#   /bin/<applet> hardlinks, /etc/passwd+group+shadow as in the docker image, /root 0700, /tmp 1777.
# debian-amd64.tar.xz: the same + static /sbin/ldconfig from the host glibc, /etc/ld.so.conf, real /lib dir
#   (only hooks.bats uses it: needs /bin/sh, ldconfig, grep, /lib).
set -e
cd ${CONF_DIR:?set CONF_DIR to the conformance work directory} && mkdir -p images && cd images && rm -rf bb deb && mkdir bb && cd bb
mkdir -p bin dev etc home proc root sys tmp usr/sbin var/spool/mail var/www && chmod 1777 tmp && chmod 700 root
cp /bin/busybox bin/busybox
for a in $(busybox --list); do [ "$a" = busybox ] || ln bin/busybox bin/$a; done
cat > etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
printf '%s\n' root:x:0: daemon:x:1: bin:x:2: sys:x:3: adm:x:4: tty:x:5: disk:x:6: lp:x:7: mail:x:8: kmem:x:9: wheel:x:10:root cdrom:x:11: dialout:x:18: floppy:x:19: video:x:28: audio:x:29: tape:x:32: www-data:x:33: operator:x:37: utmp:x:43: plugdev:x:46: staff:x:50: lock:x:54: netdev:x:82: users:x:100: nogroup:x:65534: > etc/group
printf '%s\n' 'root:*:10933:0:99999:7:::' 'nobody:*:10933:0:99999:7:::' > etc/shadow
tar -C . -cJf ../busybox-amd64.tar.xz .
cd .. && cp -a bb deb && mkdir -p deb/lib/x86_64-linux-gnu deb/sbin && cp /sbin/ldconfig deb/sbin/ && rm -f deb/bin/ldconfig
echo /lib/x86_64-linux-gnu > deb/etc/ld.so.conf
tar -C deb -cJf debian-amd64.tar.xz .
cp busybox-amd64.tar.xz debian-amd64.tar.xz $CONF_DIR/runc-src/tests/integration/testdata/
