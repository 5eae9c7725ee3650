#!/bin/sh
# Lay out the OR-Tools shared libraries of the installed `ortools` wheel as an OR-Tools
# directory (<dir>/lib/libortools.so and its dependencies), the layout ORTOOLS_DIR names.
set -eu
dest="${1:?usage: install-ortools.sh DEST_DIR}"
site="$(python3 -c 'import ortools, os; print(os.path.dirname(os.path.dirname(ortools.__file__)))')"
mkdir -p "$dest/lib"
for dir in "$site/ortools/.libs" "$site/ortools.libs"; do
    [ -d "$dir" ] || continue
    for lib in "$dir"/*.so*; do
        ln -sf "$lib" "$dest/lib/$(basename "$lib")"
    done
done
ln -sf libortools.so.9 "$dest/lib/libortools.so"
echo "OR-Tools libraries from $site laid out in $dest/lib"
