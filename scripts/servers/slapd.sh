# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Sourced by scripts/test-servers. Defines slapd_start, slapd_stop and slapd_status.
#
# A FedFS NSDB (RFC 7532) for the junction tests: two OpenLDAP slapd (Debian 12's 2.5) on
# 127.0.0.1 only, run as root, each with all it writes (cn=config folder, mdb database, pid
# file, ldapi socket, log) under $STATE/slapd/<role>:
#   provider  port 13389 (FEDFUSE_NSDB_PORT), read-write, syncprov; StartTLS on that port and
#             LDAP over TLS (ldaps) on port 13636 (FEDFUSE_NSDB_LDAPS_PORT)
#   consumer  port 13390 (FEDFUSE_NSDB_CONSUMER_PORT), plain LDAP only, a syncrepl copy
#             (refreshAndPersist, retrying every second), which answers reads while the provider
#             is down and refuses writes ("shadow context")
# The provider's certificate (CN localhost, subjectAltName DNS:localhost and IP:127.0.0.1) is
# signed by a throwaway CA, both made with openssl (EC P-256, valid 10 days) under
# $STATE/slapd/tls on the first start, and again when one is missing, does not verify or
# expires within a day: trust $STATE/slapd/tls/ca.crt (NSDB_CA_FILE in servers.env, e.g.
# `LDAPTLS_CACERT=$STATE/slapd/tls/ca.crt ldapsearch -ZZ -H ldap://127.0.0.1:13389 ...`). The
# keys are mode 0600. Name the server 127.0.0.1: libldap checks the name localhost as this
# machine's host name, which the certificate does not hold.
# Both serve dc=fedfs,dc=test with the schemas core, cosine and conf/fedfs-nsdb.ldif. The
# suffix entry is the naming context's fedfsNsdbContainerInfo, its fedfsNceDN the NCE
# ou=nce,dc=fedfs,dc=test; both entries are loaded when the provider's database is created.
# Anyone may read everything but userPassword; the rootdn cn=admin,dc=fedfs,dc=test writes
# (binding works on both, writing on the provider only), with a password generated once and
# kept in $STATE/slapd/admin.pw (mode 0600, no newline: use
# `ldapadd -x -D cn=admin,dc=fedfs,dc=test -y $STATE/slapd/admin.pw`). root manages cn=config
# over the ldapi socket with -Y EXTERNAL.
# The configuration is rebuilt at every start; the databases are kept until $STATE is removed.
# Start refuses a port something else listens on. The provider's start waits until it answers
# with StartTLS and on its ldaps port, trusting that CA alone. The consumer's start waits until
# it holds the suffix entry and, while the provider answers, until both have the same
# contextCSN.

SLAPD_DIR=$STATE/slapd
SLAPD_PROVIDER_PORT=${FEDFUSE_NSDB_PORT:-13389}
SLAPD_CONSUMER_PORT=${FEDFUSE_NSDB_CONSUMER_PORT:-13390}
SLAPD_LDAPS_PORT=${FEDFUSE_NSDB_LDAPS_PORT:-13636}
SLAPD_TLS=$SLAPD_DIR/tls
SLAPD_CA=$SLAPD_TLS/ca.crt
SLAPD_SUFFIX=dc=fedfs,dc=test
SLAPD_NCE=ou=nce,$SLAPD_SUFFIX
SLAPD_ADMIN_DN=cn=admin,$SLAPD_SUFFIX
SLAPD_PWFILE=$SLAPD_DIR/admin.pw
SLAPD_SCHEMA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/conf/fedfs-nsdb.ldif
SLAPD_SYSTEM_SCHEMA=/etc/ldap/schema
SLAPD_MODULES=/usr/lib/ldap

# slapd_pid ROLE: print the pid of our running slapd of that role, or fail.
slapd_pid() {
	local d=$SLAPD_DIR/$1 pid cmd
	[ -f "$d/slapd.pid" ] || return 1
	pid=$(cat "$d/slapd.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# A recycled pid must still be a slapd reading our configuration.
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmd == *"-F $d/slapd.d "* ]] || return 1
	echo "$pid"
}

# slapd_port ROLE: the port this role uses now: the one it was started with while it runs.
slapd_port() {
	if slapd_pid "$1" >/dev/null && [ -s "$SLAPD_DIR/$1/port" ]; then
		cat "$SLAPD_DIR/$1/port"
	elif [ "$1" = provider ]; then
		echo "$SLAPD_PROVIDER_PORT"
	else
		echo "$SLAPD_CONSUMER_PORT"
	fi
}

# slapd_ldaps_port: the provider's ldaps port: the one it was started with while it runs.
slapd_ldaps_port() {
	if slapd_pid provider >/dev/null && [ -s "$SLAPD_DIR/provider/ldaps_port" ]; then
		cat "$SLAPD_DIR/provider/ldaps_port"
	else
		echo "$SLAPD_LDAPS_PORT"
	fi
}

# slapd_ldapi_url ROLE: the ldapi:// URL of its socket (the path percent-encoded).
slapd_ldapi_url() {
	local LC_ALL=C path=$SLAPD_DIR/$1/ldapi out='' c i
	for ((i = 0; i < ${#path}; i++)); do
		c=${path:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	echo "ldapi://$out"
}

# slapd_ask PORT ARGS...: an anonymous ldapsearch of the suffix's base entry, quiet, bounded.
slapd_ask() {
	local port=$1
	shift
	ldapsearch -x -LLL -o nettimeout=2 -l 5 -H "ldap://127.0.0.1:$port" \
		-b "$SLAPD_SUFFIX" -s base "$@" 2>/dev/null
}

# slapd_answers PORT: does an LDAP server answer there (an anonymous read of the root DSE)?
slapd_answers() {
	ldapsearch -x -LLL -o nettimeout=2 -l 5 -H "ldap://127.0.0.1:$1" -b '' -s base \
		namingContexts >/dev/null 2>&1
}

# slapd_tls_ok: the CA and the server's certificate and key are there, the certificate verifies
# against the CA, and neither expires within a day.
slapd_tls_ok() {
	local f
	for f in ca.crt server.crt server.key; do
		[ -s "$SLAPD_TLS/$f" ] || return 1
	done
	openssl verify -CAfile "$SLAPD_CA" "$SLAPD_TLS/server.crt" >/dev/null 2>&1 || return 1
	for f in ca.crt server.crt; do
		openssl x509 -noout -checkend 86400 -in "$SLAPD_TLS/$f" >/dev/null 2>&1 || return 1
	done
}

# slapd_tls_make DIR: the keys (mode 0600), the CA's certificate and the server's, signed by it.
slapd_tls_make() {
	local t=$1 serial
	serial=0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	(
		umask 077
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$t/ca.key" &&
			openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$t/server.key"
	) || return 1
	openssl req -x509 -new -config "$t/openssl.cnf" -extensions ca -key "$t/ca.key" \
		-days 10 -sha256 -out "$t/ca.crt" || return 1
	openssl req -new -config "$t/openssl.cnf" -subj /CN=localhost -key "$t/server.key" \
		-out "$t/server.csr" || return 1
	openssl x509 -req -in "$t/server.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" \
		-set_serial "$serial" -days 10 -sha256 -extfile "$t/openssl.cnf" -extensions server \
		-out "$t/server.crt"
}

# slapd_tls: make the throwaway CA and the provider's certificate, unless they are fine. Made in
# a new folder that then takes the place of the old one, with its own openssl configuration (the
# system's adds extensions of its own).
slapd_tls() {
	local t=$SLAPD_TLS.tmp
	slapd_tls_ok && return 0
	rm -rf "$t"
	mkdir -p "$t"
	cat >"$t/openssl.cnf" <<EOF
# Generated by scripts/servers/slapd.sh: the extensions of the test NSDB's certificates.
[req]
distinguished_name = dn
prompt = no
[dn]
CN = fedfuse test NSDB CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
	if ! slapd_tls_make "$t" >"$t/openssl.out" 2>&1; then
		cat "$t/openssl.out" >&2
		die "slapd: openssl could not make the TLS certificates in $t"
	fi
	rm -f "$t/server.csr" "$t/openssl.out"
	chmod 0600 "$t/ca.key" "$t/server.key"
	chmod 0644 "$t/ca.crt" "$t/server.crt"
	chmod 0755 "$t"
	rm -rf "$SLAPD_TLS"
	mv "$t" "$SLAPD_TLS"
	slapd_tls_ok || die "slapd: the new TLS certificates in $SLAPD_TLS do not verify"
	echo "slapd: made a CA and a certificate for localhost/127.0.0.1 in $SLAPD_TLS"
}

# slapd_tls_answers URL ARGS...: an anonymous read of the root DSE over TLS, trusting only our
# CA (a demanding check of the server's certificate, its name included).
slapd_tls_answers() {
	local url=$1
	shift
	LDAPTLS_CACERT=$SLAPD_CA LDAPTLS_CACERTDIR='' LDAPTLS_REQCERT=demand \
		ldapsearch -x -LLL -o nettimeout=2 -l 5 -H "$url" "$@" -b '' -s base \
		namingContexts >/dev/null 2>&1
}

# slapd_password: the rootdn's password, generated once (hex: no quoting anywhere).
slapd_password() {
	if [ ! -s "$SLAPD_PWFILE" ]; then
		mkdir -p "$SLAPD_DIR"
		(
			umask 077
			od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$SLAPD_PWFILE.tmp"
		)
		mv "$SLAPD_PWFILE.tmp" "$SLAPD_PWFILE"
	fi
	chmod 0600 "$SLAPD_PWFILE"
	cat "$SLAPD_PWFILE"
}

# slapd_write_ldif ROLE FILE: the whole cn=config of that role, for slapadd -n0.
slapd_write_ldif() {
	local role=$1 out=$2 d=$SLAPD_DIR/$1 pw hash f
	pw=$(slapd_password)
	# -T: the password is read from the file, never on a command line.
	hash=$(slappasswd -h '{SSHA}' -T "$SLAPD_PWFILE") || die "slapd: slappasswd failed"
	{
		cat <<EOF
# Generated by scripts/servers/slapd.sh ($role); rebuilt at every start.
dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: $d/slapd.pid
olcArgsFile: $d/slapd.args
olcLogLevel: none
EOF
		# GnuTLS (Debian's slapd) takes PEM keys in PKCS#8 as openssl writes them; it builds
		# the chain it sends from the CA file.
		[ "$role" = provider ] && cat <<EOF
olcTLSCACertificateFile: $SLAPD_CA
olcTLSCertificateFile: $SLAPD_TLS/server.crt
olcTLSCertificateKeyFile: $SLAPD_TLS/server.key
EOF
		cat <<EOF

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: $SLAPD_MODULES
olcModuleLoad: back_mdb
EOF
		[ "$role" = provider ] && echo "olcModuleLoad: syncprov"
		cat <<EOF

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

EOF
		for f in "$SLAPD_SYSTEM_SCHEMA/core.ldif" "$SLAPD_SYSTEM_SCHEMA/cosine.ldif" \
			"$SLAPD_SCHEMA"; do
			cat "$f"
			printf '\n'
		done
		cat <<EOF

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcSizeLimit: 10000
olcTimeLimit: 60

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage
  by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcDbDirectory: $d/db
olcDbMaxSize: 268435456
olcSuffix: $SLAPD_SUFFIX
olcRootDN: $SLAPD_ADMIN_DN
olcDbIndex: objectClass eq
olcDbIndex: entryCSN,entryUUID eq
olcDbIndex: fedfsFsnUuid,fedfsFslUuid eq
olcAccess: {0}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {1}to * by dn.exact="$SLAPD_ADMIN_DN" write by * read
olcRootPW: $hash
EOF
		if [ "$role" = provider ]; then
			cat <<EOF

dn: olcOverlay={0}syncprov,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcSyncProvConfig
olcOverlay: {0}syncprov
olcSpCheckpoint: 100 10
olcSpSessionLog: 1000
EOF
		else
			# The rootdn may bind here too (to read with the same credentials), but a shadow
			# copy takes writes from syncrepl alone. No olcUpdateRef: a write is refused, not
			# referred to the provider.
			cat <<EOF
olcSyncrepl: {0}rid=001 provider=ldap://127.0.0.1:$(slapd_port provider)
  bindmethod=simple binddn="$SLAPD_ADMIN_DN" credentials=$pw
  searchbase="$SLAPD_SUFFIX" scope=sub type=refreshAndPersist retry="1 +"
  timeout=3 network-timeout=2 keepalive=30:3:5 schemachecking=on
EOF
		fi
	} >"$out"
}

# slapd_base_ldif: the entries a new provider database starts with.
slapd_base_ldif() {
	cat <<EOF
dn: $SLAPD_SUFFIX
objectClass: top
objectClass: dcObject
objectClass: organization
objectClass: fedfsNsdbContainerInfo
dc: fedfs
o: fedfs
fedfsNceDN: $SLAPD_NCE

dn: $SLAPD_NCE
objectClass: top
objectClass: organizationalUnit
ou: nce
EOF
}

slapd_fail() {
	local role=$1
	shift
	echo "test-servers: slapd ($role): $*" >&2
	if [ -s "$SLAPD_DIR/$role/slapd.log" ]; then
		echo "--- last lines of $SLAPD_DIR/$role/slapd.log:" >&2
		tail -n 25 "$SLAPD_DIR/$role/slapd.log" >&2
	fi
	slapd_stop_one "$role"
	slapd_record
	exit 1
}

slapd_env() {
	local pid
	env_set NSDB_HOST 127.0.0.1
	env_set NSDB_PORT "$(slapd_port provider)"
	env_set NSDB_CONSUMER_PORT "$(slapd_port consumer)"
	env_set NSDB_LDAPS_PORT "$(slapd_ldaps_port)"
	env_set NSDB_CA_FILE "$SLAPD_CA"
	env_set NSDB_SUFFIX "$SLAPD_SUFFIX"
	env_set NSDB_NCE "$SLAPD_NCE"
	env_set NSDB_ADMIN_DN "$SLAPD_ADMIN_DN"
	env_set NSDB_ADMIN_PW_FILE "$SLAPD_PWFILE"
	if pid=$(slapd_pid provider); then
		env_set NSDB_PID "$pid"
	else
		env_unset NSDB_PID
	fi
	if pid=$(slapd_pid consumer); then
		env_set NSDB_CONSUMER_PID "$pid"
	else
		env_unset NSDB_CONSUMER_PID
	fi
}

# slapd_wait_replica: the consumer holds the suffix entry and, if the provider answers, the
# same contextCSN as the provider.
slapd_wait_replica() {
	local cport pport pcsn ccsn i
	cport=$(slapd_port consumer)
	pport=$(slapd_port provider)
	for ((i = 0; i < 150; i++)); do
		slapd_ask "$cport" dn | grep -q '^dn:' && break
		slapd_pid consumer >/dev/null || slapd_fail consumer "slapd exited"
		if ((i == 25)) && ! slapd_answers "$pport"; then
			slapd_fail consumer "it holds no copy yet, and no provider answers on" \
				"127.0.0.1:$pport to send one"
		fi
		sleep 0.2
	done
	((i < 150)) || slapd_fail consumer "$SLAPD_SUFFIX did not replicate from" \
		"127.0.0.1:$pport in 30 s"
	slapd_ask "$pport" dn | grep -q '^dn:' || return 0
	for ((i = 0; i < 150; i++)); do
		pcsn=$(slapd_ask "$pport" contextCSN | grep '^contextCSN:' | sort)
		ccsn=$(slapd_ask "$cport" contextCSN | grep '^contextCSN:' | sort)
		[ -n "$pcsn" ] && [ "$pcsn" = "$ccsn" ] && return 0
		sleep 0.2
	done
	slapd_fail consumer "not in step with the provider after 30 s (contextCSN" \
		"${ccsn:-none} here, ${pcsn:-none} there)"
}

# slapd_start_one ROLE
slapd_start_one() {
	local role=$1 d=$SLAPD_DIR/$1 port pid i url lport='' p urls
	port=$(slapd_port "$role")
	if pid=$(slapd_pid "$role"); then
		echo "slapd: $role already running (pid $pid, port $port)"
		return 0
	fi
	if [ "$role" = provider ]; then
		lport=$(slapd_ldaps_port)
		[ "$lport" != "$port" ] ||
			die "slapd: the provider's ldap and ldaps ports are both $port" \
				"(FEDFUSE_NSDB_PORT, FEDFUSE_NSDB_LDAPS_PORT)"
	fi
	for p in $port $lport; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			die "slapd: 127.0.0.1:$p is in use (another slapd? FEDFUSE_TEST_STATE=$STATE;" \
				"choose other ports with FEDFUSE_NSDB_PORT, FEDFUSE_NSDB_CONSUMER_PORT" \
				"and FEDFUSE_NSDB_LDAPS_PORT)"
		fi
	done
	[ "$role" = consumer ] || slapd_tls
	[ "${#d}" -le 100 ] || die "slapd: $d is too long a path for an ldapi socket"
	mkdir -p "$d/db"
	chmod 0700 "$d" # the consumer's configuration holds the rootdn's password
	rm -rf "$d/slapd.d" "$d/slapd.d.tmp"
	mkdir -p "$d/slapd.d.tmp"
	slapd_write_ldif "$role" "$d/config.ldif"
	slapadd -n0 -F "$d/slapd.d.tmp" -l "$d/config.ldif" >"$d/slapadd.out" 2>&1 ||
		{ cat "$d/slapadd.out" >&2; die "slapd: slapadd -n0 failed for the $role's cn=config"; }
	mv "$d/slapd.d.tmp" "$d/slapd.d"
	if [ "$role" = provider ] && [ ! -e "$d/db/data.mdb" ]; then
		# -w: record the contextCSN, which syncprov hands to consumers.
		slapd_base_ldif | slapadd -w -n1 -F "$d/slapd.d" >"$d/slapadd.out" 2>&1 ||
			{ cat "$d/slapadd.out" >&2; die "slapd: cannot load the provider's base entries"; }
	fi
	rm -f "$d/slapd.pid" "$d/ldapi" "$d/ldaps_port"
	echo "$port" >"$d/port"
	urls="ldap://127.0.0.1:$port/"
	if [ -n "$lport" ]; then
		echo "$lport" >"$d/ldaps_port"
		urls+=" ldaps://127.0.0.1:$lport/"
	fi
	url=$(slapd_ldapi_url "$role")
	# -d sync: in the foreground, logging errors and replication (no per-operation lines).
	setsid slapd -d sync -h "$urls $url" -F "$d/slapd.d" \
		</dev/null >>"$d/slapd.log" 2>&1 &
	pid=$!
	echo "$pid" >"$d/slapd.pid" # slapd writes the same pid there
	for ((i = 0; i < 20; i++)); do
		wait_port "$port" 1 && break
		kill -0 "$pid" 2>/dev/null || slapd_fail "$role" "slapd exited"
	done
	((i < 20)) || slapd_fail "$role" "nothing listens on 127.0.0.1:$port"
	for ((i = 0; i < 50; i++)); do
		slapd_answers "$port" && break
		kill -0 "$pid" 2>/dev/null || slapd_fail "$role" "slapd exited"
		sleep 0.1
	done
	((i < 50)) || slapd_fail "$role" "no LDAP answer on 127.0.0.1:$port"
	if [ -n "$lport" ]; then
		wait_port "$lport" 2 || slapd_fail "$role" "nothing listens on 127.0.0.1:$lport (ldaps)"
		slapd_tls_answers "ldap://127.0.0.1:$port" -ZZ ||
			slapd_fail "$role" "no answer with StartTLS on 127.0.0.1:$port trusting $SLAPD_CA"
		slapd_tls_answers "ldaps://127.0.0.1:$lport" ||
			slapd_fail "$role" "no answer over ldaps on 127.0.0.1:$lport trusting $SLAPD_CA"
	fi
	[ "$role" = provider ] || slapd_wait_replica
	echo "slapd: $role started (pid $pid, port $port${lport:+, ldaps $lport})"
}

# slapd_stop_one ROLE
slapd_stop_one() {
	local role=$1 pid i
	if pid=$(slapd_pid "$role"); then
		kill -CONT "$pid" 2>/dev/null || true # a test may have stopped it
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
		echo "slapd: $role stopped (pid $pid)"
	fi
	rm -f "$SLAPD_DIR/$role/slapd.pid"
}

# slapd_record: servers.env describes what runs (nothing once both are stopped).
slapd_record() {
	if slapd_pid provider >/dev/null || slapd_pid consumer >/dev/null; then
		slapd_env
	else
		env_unset NSDB_
	fi
}

# slapd_start [provider|consumer]: start both (the provider first), or one.
slapd_start() {
	local role
	case ${1:-} in
	'' | provider | consumer) ;;
	*) die "slapd: unknown role '$1' (provider, consumer)" ;;
	esac
	command -v slapd >/dev/null || die "slapd: slapd is not installed (apt-get install slapd)"
	command -v ldapsearch >/dev/null ||
		die "slapd: ldapsearch is not installed (apt-get install ldap-utils)"
	command -v openssl >/dev/null || die "slapd: openssl is not installed (apt-get install openssl)"
	[ -f "$SLAPD_SCHEMA" ] || die "slapd: $SLAPD_SCHEMA is missing"
	for role in ${1:-provider consumer}; do
		slapd_start_one "$role"
	done
	slapd_record
}

# slapd_stop [provider|consumer]: stop both, or one.
slapd_stop() {
	local role
	case ${1:-} in
	'' | provider | consumer) ;;
	*) die "slapd: unknown role '$1' (provider, consumer)" ;;
	esac
	for role in ${1:-consumer provider}; do
		slapd_stop_one "$role"
	done
	slapd_record
}

slapd_status() {
	local role pid port rc=0
	for role in provider consumer; do
		port=$(slapd_port "$role")
		if ! pid=$(slapd_pid "$role"); then
			echo "slapd: $role not running"
			rc=1
		elif ! slapd_ask "$port" dn | grep -q '^dn:'; then
			echo "slapd: $role running (pid $pid) but not answering on 127.0.0.1:$port"
			rc=1
		elif [ "$role" = consumer ]; then
			echo "slapd: $role running (pid $pid), answering on 127.0.0.1:$port"
		elif slapd_tls_answers "ldap://127.0.0.1:$port" -ZZ &&
			slapd_tls_answers "ldaps://127.0.0.1:$(slapd_ldaps_port)"; then
			echo "slapd: $role running (pid $pid), answering on 127.0.0.1:$port (also with" \
				"StartTLS) and 127.0.0.1:$(slapd_ldaps_port) (ldaps)"
		else
			echo "slapd: $role running (pid $pid), answering on 127.0.0.1:$port but not with" \
				"StartTLS or on 127.0.0.1:$(slapd_ldaps_port) (ldaps) trusting $SLAPD_CA"
			rc=1
		fi
	done
	return "$rc"
}
