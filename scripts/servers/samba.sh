# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by scripts/test-servers. Defines samba_start, samba_stop and samba_status.
samba_start() { die "samba: not implemented yet"; }
samba_stop() { :; }
samba_status() { echo "samba: not implemented yet"; }
