# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by scripts/test-servers. Defines ganesha_start, ganesha_stop and ganesha_status.
ganesha_start() { die "ganesha: not implemented yet"; }
ganesha_stop() { :; }
ganesha_status() { echo "ganesha: not implemented yet"; }
