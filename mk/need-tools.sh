#!/bin/sh
# need-tools.sh WHY TOOL... — make sure the Debian packages named TOOL are
# installed for `make test` (TOOL is a command and the package of the same
# name, or command=package). As root with apt-get (CI) the missing ones are
# installed, saying so first; otherwise nothing is installed and the message
# says what to install and why.
why=$1; shift
missing=
for t in "$@"; do
	cmd=${t%%=*} pkg=${t#*=}
	command -v "$cmd" >/dev/null 2>&1 && continue
	case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "make test: installing$missing with apt-get ($why)" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
	exit
fi
echo "make test needs$missing ($why); make installs packages only as root." >&2
echo "Install them, e.g.: sudo apt-get install$missing" >&2
exit 1
