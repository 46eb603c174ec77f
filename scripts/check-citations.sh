#!/usr/bin/env bash
# Checks that every citation of the project's reference notes resolves (issue #9).
#
# Canonical form: the file's path from the repository root, then "§" and a section number:
#   docs/semantics.md §6.2          one section
#   docs/semantics.md §4, §5 and §7 several sections of one file (", §n", " and §n", " to §n", "-§n")
#   docs/registration.md §1-§5      a range (both ends are checked)
#   docs/semantics.md               the whole file
# A section exists when the file has a markdown heading that starts with its number
# ("## 6.2 Fencing", "### 6.2. Steps", "## 6 Fencing").
#
# Fails on, and prints as file:line: text,
#   - a docs/<name>.md that does not exist, or a § number without such a heading;
#   - any other <name>.md reference that resolves neither from the citing file's directory
#     nor from the repository root (e.g. "semantics.md §3" without docs/);
#   - the old shorthand and paths: "sem §n", "shared/reference/", "shared/guides/".
# Scans *.rs *.md *.sh *.java *.toml *.fio *.proto outside target/, fuzz/target/ and .git/.
#
# Usage: scripts/check-citations.sh [repo root]   (default: the repository holding this script)
set -euo pipefail

root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
cd "$root"

# Paths that look like .md references but are outputs, not citations.
allow_re='^RESULTS/'

sec='[0-9]+(\.[0-9]+)*'
cite_re="docs/[A-Za-z0-9_-]+\.md( §${sec}((, | and | to |-)§${sec})*)?"

bad=0
report() { # file line text why
  printf '%s:%s: %s    <- %s\n' "$1" "$2" "$3" "$4"
  bad=$((bad + 1))
}

# Does markdown file $1 have a heading starting with section number $2?
has_section() {
  local esc=${2//./\\.}
  grep -Eq "^#{1,6}[[:space:]]+${esc}(\.?[[:space:]]|\.?$)" "$1"
}

mapfile -d '' files < <(find . \( -path ./target -o -path ./fuzz/target -o -path ./.git \) -prune \
  -o -type f \( -name '*.rs' -o -name '*.md' -o -name '*.sh' -o -name '*.java' -o -name '*.toml' \
  -o -name '*.fio' -o -name '*.proto' \) -print0 | sort -z)

for f in "${files[@]}"; do
  f=${f#./}
  [ "$f" = scripts/check-citations.sh ] && continue # its own comments show the bad forms
  dir=$(dirname "$f")
  # Only lines that mention .md or the old shorthand are looked at.
  while IFS= read -r hit; do
    line=${hit%%:*}
    text=${hit#*:}
    short=$(printf '%s' "$text" | sed -E 's/^[[:space:]]+//' | cut -c1-160)

    if printf '%s' "$text" | grep -Eq '(^|[^A-Za-z0-9_])sem §'; then
      report "$f" "$line" "$short" 'old shorthand "sem §": write docs/semantics.md §n'
    fi
    if printf '%s' "$text" | grep -Eq 'shared/(reference|guides)/'; then
      report "$f" "$line" "$short" 'shared/ notes are not part of the repository: cite docs/<name>.md'
    fi

    # Canonical citations: the file and every section number.
    while IFS= read -r c; do
      [ -n "$c" ] || continue
      doc=${c%% *}
      if [ ! -f "$doc" ]; then
        report "$f" "$line" "$short" "$doc does not exist"
        continue
      fi
      while IFS= read -r n; do
        [ -n "$n" ] || continue
        has_section "$doc" "$n" || report "$f" "$line" "$short" "$doc has no heading for §$n"
      done < <(printf '%s' "$c" | grep -oE "§${sec}" | sed 's/^§//' || true)
    done < <(printf '%s' "$text" | grep -oE "$cite_re" || true)

    # Every other .md reference must resolve from the citing file or from the root.
    # A section number may only follow the canonical root-relative docs/<name>.md.
    while IFS= read -r m; do
      [ -n "$m" ] || continue
      case "$m" in docs/*) continue ;; esac # checked above (and must be root-relative)
      m=${m#./}
      sect=${m#*.md}
      m=${m%"$sect"}
      printf '%s' "$m" | grep -Eq "$allow_re" && continue
      if [ ! -f "$dir/$m" ] && [ ! -f "$m" ]; then
        report "$f" "$line" "$short" "$m is not a file of this repository (cite docs/<name>.md)"
      elif [ -n "$sect" ]; then
        report "$f" "$line" "$short" "section of $m cited in a non-canonical form (write docs/<name>.md §n)"
      fi
    done < <(printf '%s' "$text" |
      grep -oE '(^|[^A-Za-z0-9_./-])[A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md( §| sections? [0-9]| [0-9])?' |
      sed -E 's/^[^A-Za-z0-9_./-]//' || true)
  done < <(grep -nE '\.md|sem §|shared/(reference|guides)/' "$f" || true)
done

if [ "$bad" -gt 0 ]; then
  echo "check-citations: $bad bad citation(s)" >&2
  exit 1
fi
echo "check-citations: all citations resolve"
