#!/usr/bin/env bash
# Fails on banned C functions (after curl's checksrc): unbounded string
# functions, ato*, and raw allocation outside internal/core/alloc.c (a member
# call such as kind->free(m) is a vtable, not libc).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard -- 'internal/*.c' 'controller/*.c' 'include/*.h' 'internal/*.h')
[ ${#files[@]} -eq 0 ] && exit 0
status=0
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|atoll|atof|strncpy|strncat|tmpnam|mktemp)\s*\('
if grep -nE "$banned" "${files[@]}"; then
  echo "checksrc: banned function above" >&2
  status=1
fi
alloc='(^|[^_a-z>.])(malloc|calloc|realloc|free|strdup|strndup)\s*\('
if grep -nE "$alloc" "${files[@]}" | grep -v '^internal/core/alloc.c:' | grep -vE ':\s*(\*|//|/\*)'; then
  echo "checksrc: use carp_malloc/carp_calloc/carp_realloc/carp_free/carp_strdup" >&2
  status=1
fi
exit $status
