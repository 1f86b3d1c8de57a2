-- Lmod module for oneside @VERSION@, installed by `make install` in
-- <prefix>/share/modulefiles/oneside/@VERSION@.lua. The prefix is found
-- from this file's own path, so a moved installation still loads.
help([[
oneside @VERSION@: one-sided messaging (OpenSHMEM 1.6) with rlaunch, oshrun
and oshcc. The user guide is in $ONESIDE_HOME/share/doc/oneside/.
]])
whatis("Name: oneside")
whatis("Version: @VERSION@")
whatis("Description: OpenSHMEM 1.6 and one-sided put/get over shared memory, TCP, verbs and libfabric")

local prefix = myFileName():match("^(.*)/share/modulefiles/[^/]+/[^/]+$")
setenv("ONESIDE_HOME", prefix)
prepend_path("PATH", pathJoin(prefix, "bin"))
prepend_path("MANPATH", pathJoin(prefix, "share/man"))
-- An empty entry keeps the system pages: man searches its default path there.
append_path("MANPATH", "")
prepend_path("PKG_CONFIG_PATH", pathJoin(prefix, "lib/pkgconfig"))
family("openshmem")
