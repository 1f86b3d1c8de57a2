# Prints oneside/peer ratios from two files of "<metric> <bytes> <value> <unit>"
# lines (ours first, then the peer's); each figure is the median of its lines.
#   awk -v rows="put_lat 8|put_bw 1048576" -v peer="Open MPI" -f bench/ratios.awk ours.txt peer.txt
# Latency-like figures (lower is better): *_lat, *_lat_npN, barrier_*, launch*, wireup*.
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
FNR == 1 { side++ }
{ key = $1 " " $2; vals[side, key] = vals[side, key] " " $3; unit[key] = $4 }
END {
  n = split(rows, list, "|")
  printf "%-18s %14s %14s %8s  %s\n", "figure", "oneside", peer, "ratio", "better"
  for (r = 1; r <= n; r++) {
    key = list[r]; split(key, kb, " ")
    if (!((1, key) in vals) || !((2, key) in vals)) continue
    ours = median(vals[1, key]); theirs = median(vals[2, key])
    lower = (kb[1] ~ /_lat$|_lat_np|^barrier|^launch|^wireup/)
    printf "%-18s %14.4f %14.4f %8.2f  %s [%s]\n", key, ours, theirs, ours / theirs, lower ? "lower" : "higher", unit[key]
  }
}
