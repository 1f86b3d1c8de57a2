# oneside against the best of several peers, from files of
# "<metric> <bytes> <value> <unit>" lines: the first file is ours, the others
# are the peers, in the order of `names`. Each figure is the median of its
# lines in a file; "best peer" is the lowest median for latency-like figures
# (*_lat, barrier_*, launch*, wireup*, as bench/ratios.awk) and the highest for the
# others; ratio = ours / best peer. An empty or missing figure shows as "-".
#
#   awk -f bench/best_ratios.awk -v names="oneside|oshmem|mpi" [-v goal=1.0] \
#       [-v rows="bcast_lat 8|bcast_lat 65536"] [-v tsv=FILE] ours.txt oshmem.txt mpi.txt
#
# rows: only these figures, in this order (default: every figure, grouped by
# metric in order of first appearance, sizes ascending). goal: adds a column
# and a summary of the ratios that meet it (<= goal for latency-like figures,
# >= goal for the others). tsv: also writes "metric bytes <one column per
# file> best ratio" to FILE ("-" where missing), for plotting.
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) a[i] += 0
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lower_better(metric) { return metric ~ /_lat$|^barrier|^launch|^wireup/ }
function fmt(v) { return v == "" ? "-" : sprintf("%.4f", v) }
BEGIN {
  nfiles = 0
  for (i = 1; i < ARGC; i++) if (ARGV[i] !~ /^[A-Za-z_][A-Za-z_0-9]*=/) side_of[ARGV[i]] = ++nfiles
  nn = split(names, name, "|")
  for (i = nn + 1; i <= nfiles; i++) name[i] = (i == 1 ? "oneside" : "peer" (i - 1))
  nmetrics = 0
}
NF >= 3 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.eE+-]+$/ {
  s = side_of[FILENAME]; key = $1 " " $2
  vals[s, key] = vals[s, key] " " $3
  if (!($1 in seen_metric)) { seen_metric[$1] = 1; metric[++nmetrics] = $1 }
  if (!(key in seen_key)) { seen_key[key] = 1; sizes[$1] = sizes[$1] " " $2 }
  unit[key] = (NF >= 4 ? $4 : "")
}
END {
  nrows = 0
  if (rows != "") nrows = split(rows, row, "|")
  else for (m = 1; m <= nmetrics; m++) {
    n = split(sizes[metric[m]], sz, " ")
    for (i = 1; i <= n; i++) sz[i] += 0
    for (i = 2; i <= n; i++) { t = sz[i]; for (j = i - 1; j >= 1 && sz[j] > t; j--) sz[j + 1] = sz[j]; sz[j + 1] = t }
    for (i = 1; i <= n; i++) row[++nrows] = metric[m] " " sz[i]
  }
  printf "%-26s", "figure"
  for (s = 1; s <= nfiles; s++) printf " %12s", name[s]
  if (nfiles > 2) printf " %12s", "best peer"
  printf " %8s", "ratio"
  if (goal != "") printf " %5s", "goal"
  printf "\n"
  met = 0; rated = 0; worst = ""
  for (r = 1; r <= nrows; r++) {
    key = row[r]; split(key, kb, " "); lower = lower_better(kb[1])
    any = 0
    for (s = 1; s <= nfiles; s++) { v[s] = ((s, key) in vals) ? median(vals[s, key]) : ""; if (v[s] != "") any = 1 }
    if (!any) continue
    best = ""; bestname = "-"
    for (s = 2; s <= nfiles; s++) if (v[s] != "" && (best == "" || (lower ? v[s] < best : v[s] > best))) { best = v[s]; bestname = name[s] }
    ratio = (v[1] != "" && best != "" && best > 0) ? v[1] / best : ""
    printf "%-26s", key
    for (s = 1; s <= nfiles; s++) printf " %12s", fmt(v[s])
    if (nfiles > 2) printf " %12s", bestname
    printf " %8s", ratio == "" ? "-" : sprintf("%.2f", ratio)
    if (goal != "" && ratio != "") {
      ok = lower ? ratio <= goal + 0 : ratio >= goal + 0
      printf " %5s", ok ? "ok" : "MISS"
      rated++; met += ok
      if (worst == "" || (lower ? ratio > worst_ratio : ratio < worst_ratio)) { worst = key; worst_ratio = ratio }
    }
    printf "\n"
    if (tsv != "") {
      printf "%s %s", kb[1], kb[2] > tsv
      for (s = 1; s <= nfiles; s++) printf " %s", (v[s] == "" ? "-" : v[s]) > tsv
      printf " %s %s\n", (nfiles > 2 ? bestname : name[2]), (ratio == "" ? "-" : ratio) > tsv
    }
  }
  if (goal != "") {
    if (rated) printf "%d of %d figures meet the goal (%s); worst: %s at %.2f\n", met, rated, goal, worst, worst_ratio
    else printf "no figure has both sides\n"
  }
  if (tsv != "") close(tsv)
}
