# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Sourced by scripts/test-servers. Defines addc_start, addc_stop and addc_status.
#
# A Samba Active Directory domain controller (Debian 12's samba-ad-dc), for sec=krb5: realm
# FEDFUSE.TEST, host dc1.fedfuse.test, provisioned afresh at every start with all its state
# under $STATE/addc, and /run/samba of its own (a DC whose smbd found winbindd at the machine's
# socket would talk to whichever winbindd took it last). A DC listens where clients expect it (Kerberos on 88, LDAP, SMB on 445),
# so it runs in a network namespace of its own (ADDC_NETNS), where its loopback is the only
# interface: nothing of it is reachable from the machine's own network stack, and nothing there
# collides with it. A client joins that namespace for its network only (nsenter --net), so that
# a FUSE mount it makes stays in the machine's mount namespace.
#
# libsmbclient will not use Kerberos towards an address or "localhost", so start adds the line
# "127.0.0.1 dc1.fedfuse.test" to /etc/hosts (marked) and stop takes it out again.
#
# Two domain users, alice and bob (passwords generated, in $STATE/addc/USER.pw, 0600), and one
# share, data, with unix permissions only (no NT ACLs): in it alice/ belongs to alice and bob/
# to bob (each made by its user over SMB, so owned by the user's id on the DC, then 0755),
# both/ is writable by all. $STATE/addc/krb5.conf points Kerberos at the DC (KRB5_CONFIG).

ADDC_DIR=$STATE/addc
ADDC_NETNS=${FEDFUSE_ADDC_NETNS:-fedfuse-addc}
ADDC_REALM=FEDFUSE.TEST
ADDC_HOST=dc1.fedfuse.test
ADDC_MARK="# fedfuse test-servers addc"
ADDC_USERS="alice bob"

addc_pid() {
	local pid
	pid=$(cat "$ADDC_DIR/run/samba.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# samba renames its processes, so their command line cannot say whose they are: a
	# recycled pid must at least be a samba.
	[ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = samba ] || return 1
	echo "$pid"
}

# addc_in CMD...: run CMD in the DC's network namespace (and nothing else of it).
addc_in() {
	nsenter --net="/run/netns/$ADDC_NETNS" "$@"
}

addc_wait_port() {
	local port=$1 i
	for ((i = 0; i < 300; i++)); do
		addc_in bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

addc_fail() {
	echo "test-servers: addc: $*" >&2
	for f in "$ADDC_DIR/log/samba.out" "$ADDC_DIR/log/log.samba" "$ADDC_DIR/provision.log"; do
		[ -f "$f" ] && { echo "--- $f (tail)" >&2; tail -n 30 "$f" >&2; }
	done
	addc_stop
	exit 1
}

addc_hosts_add() {
	grep -q "$ADDC_MARK" /etc/hosts 2>/dev/null && return 0
	# Appended in place: /etc/hosts may be a mount point, which a rename would not replace.
	[ -z "$(tail -c 1 /etc/hosts)" ] || echo >>/etc/hosts
	printf '127.0.0.1 %s %s\n' "$ADDC_HOST" "$ADDC_MARK" >>/etc/hosts
}

addc_hosts_remove() {
	local kept
	grep -q "$ADDC_MARK" /etc/hosts 2>/dev/null || return 0
	kept=$(grep -v "$ADDC_MARK" /etc/hosts)
	printf '%s\n' "$kept" >/etc/hosts
}

addc_password() {
	printf 'Ff1.%s' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
}

# addc_kinit USER CCACHE: a ticket for USER in CCACHE.
addc_kinit() {
	sed -n 1p "$ADDC_DIR/$1.pw" | KRB5_CONFIG=$ADDC_DIR/krb5.conf \
		addc_in kinit -c "FILE:$2" "$1@$ADDC_REALM" >/dev/null
}

addc_start() {
	local d=$ADDC_DIR pid u pw i
	for c in samba samba-tool kinit nsenter ip; do
		command -v "$c" >/dev/null ||
			die "addc: $c not found (apt-get install samba-ad-dc samba-ad-provision" \
				"samba-dsdb-modules krb5-user iproute2 util-linux)"
	done
	if pid=$(addc_pid); then
		echo "addc: already running (pid $pid)"
	else
		rm -rf "$d"
		mkdir -p "$d"/{run,log,share}
		ip netns add "$ADDC_NETNS" 2>/dev/null || [ -e "/run/netns/$ADDC_NETNS" ] ||
			die "addc: cannot make the network namespace $ADDC_NETNS"
		ip netns exec "$ADDC_NETNS" ip link set lo up || addc_fail "no loopback in $ADDC_NETNS"
		samba-tool domain provision --realm="$ADDC_REALM" --domain=FEDFUSE \
			--server-role=dc --dns-backend=NONE --host-name=dc1 \
			--adminpass="$(addc_password)" --targetdir="$d" \
			--option="interfaces = lo" --option="bind interfaces only = yes" \
			--option="pid directory = $d/run" --option="log file = $d/log/log.%m" \
			--option="logging = file" --option="ncalrpc dir = $d/run/ncalrpc" \
			--option="ntp signd socket directory = $d/run/ntp_signd" \
			--option="usershare path =" >"$d/provision.log" 2>&1 ||
			addc_fail "samba-tool domain provision failed"
		cat >>"$d/etc/smb.conf" <<EOF

[data]
	path = $d/share
	read only = no
	vfs objects =
EOF
		cat >"$d/krb5.conf" <<EOF
[libdefaults]
	default_realm = $ADDC_REALM
	dns_lookup_realm = false
	dns_lookup_kdc = false
	rdns = false
[realms]
	$ADDC_REALM = {
		kdc = 127.0.0.1
	}
[domain_realm]
	$ADDC_HOST = $ADDC_REALM
EOF
		for u in $ADDC_USERS; do
			pw=$(addc_password)
			(
				umask 077
				printf '%s\n' "$pw" >"$d/$u.pw"
			)
			samba-tool user create "$u" "$pw" -s "$d/etc/smb.conf" >>"$d/provision.log" 2>&1 ||
				addc_fail "samba-tool user create $u failed"
		done
		chmod 1777 "$d/share"
		: >"$d/log/samba.out"
		# smbd finds winbindd at a path built into libwbclient (/run/samba/winbindd), not
		# where smb.conf says: the DC gets a /run/samba of its own, in a mount namespace
		# of its own, so that it talks to its own winbindd and to no other.
		mkdir -p /run/samba
		setsid ip netns exec "$ADDC_NETNS" unshare --mount --propagation private \
			sh -c 'mount -t tmpfs -o mode=0755 fedfuse-addc /run/samba && exec "$@"' sh \
			samba --foreground --no-process-group -s "$d/etc/smb.conf" \
			</dev/null >>"$d/log/samba.out" 2>&1 &
		addc_wait_port 88 || addc_fail "no KDC on 127.0.0.1:88 in $ADDC_NETNS"
		addc_wait_port 445 || addc_fail "no smbd on 127.0.0.1:445 in $ADDC_NETNS"
		pid=$(addc_pid) || addc_fail "samba did not start"
		addc_hosts_add
		for u in $ADDC_USERS; do
			addc_kinit "$u" "$d/cc_$u" || addc_fail "kinit $u failed"
			# The DC may take a moment more before it serves logons.
			for ((i = 0; i < 50; i++)); do
				KRB5_CONFIG=$d/krb5.conf KRB5CCNAME=FILE:$d/cc_$u addc_in smbclient \
					-s "$d/etc/smb.conf" "//$ADDC_HOST/data" --use-kerberos=required \
					-c "mkdir $u" >"$d/log/smbclient.out" 2>&1 && break
				sleep 0.2
			done
			[ -d "$d/share/$u" ] ||
				addc_fail "smbclient as $u: cannot make data/$u: $(tail -n 3 "$d/log/smbclient.out")"
			chmod 0755 "$d/share/$u"
			rm -f "$d/cc_$u"
		done
		mkdir -m 0777 "$d/share/both"
		chmod 0777 "$d/share/both"
		echo "addc: started (pid $pid, network namespace $ADDC_NETNS)"
	fi
	addc_hosts_add
	env_set ADDC_URI "smb://$ADDC_HOST/data"
	env_set ADDC_DIR "$d/share"
	env_set ADDC_NETNS "$ADDC_NETNS"
	env_set ADDC_KRB5_CONFIG "$d/krb5.conf"
	env_set ADDC_REALM "$ADDC_REALM"
	env_set ADDC_USERS "$ADDC_USERS"
	env_set ADDC_PWDIR "$d"
	env_set ADDC_SMB_CONF "$d/etc/smb.conf"
	env_set ADDC_PID "$(addc_pid)"
}

addc_stop() {
	local pid i
	if pid=$(addc_pid); then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
		echo "addc: stopped (pid $pid)"
	fi
	# Whatever is left in the namespace (samba's children) goes with it.
	if [ -e "/run/netns/$ADDC_NETNS" ]; then
		for pid in $(ip netns pids "$ADDC_NETNS" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		ip netns del "$ADDC_NETNS" 2>/dev/null || true
	fi
	addc_hosts_remove
	env_unset ADDC_
}

addc_status() {
	local pid
	if pid=$(addc_pid); then
		echo "addc: running (pid $pid, network namespace $ADDC_NETNS)"
	else
		echo "addc: not running"
		return 1
	fi
}
