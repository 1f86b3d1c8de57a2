#!/usr/bin/env bash
# Plots of bench/compare_coll.sh's figures with gnuplot (Debian gnuplot-nox):
# latency against size per collective and rank count, log-log, oneside beside
# each peer (medians over the rounds; dashed: the same under load, when
# LOAD=1 produced them), and the barrier against the rank count.
#
#   bench/plot_coll.sh [DIR]     (DIR=target/compare_coll; writes DIR/*.svg)
# Reads DIR/{ours,oshmem,mpi}[-loaded]-npN.txt; TERM_SVG=0 writes PNG instead
# (for a quick look). The plotted medians are in DIR/plotdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-target/compare_coll}
if ! command -v gnuplot >/dev/null; then
  echo "plot_coll: installing gnuplot-nox" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox; } >&2
fi
EXT=svg TERMINAL='svg size 800,520 dynamic font "sans,12" background rgb "white"'
if [ "${TERM_SVG:-1}" = 0 ]; then EXT=png TERMINAL='png size 800,520'; fi

sides=(ours oshmem mpi ours-loaded oshmem-loaded mpi-loaded)
titles=("oneside" "Open MPI oshmem" "Open MPI (MPI)" "oneside, loaded" "oshmem, loaded" "MPI, loaded")
styles=("lw 2 lc rgb '#d62728' pt 7" "lw 1.5 lc rgb '#1f77b4' pt 5" "lw 1.5 lc rgb '#2ca02c' pt 9"
        "lw 2 lc rgb '#d62728' pt 6 dt 2" "lw 1.5 lc rgb '#1f77b4' pt 4 dt 2" "lw 1.5 lc rgb '#2ca02c' pt 8 dt 2")
PD=$DIR/plotdata
mkdir -p "$PD"
nps=$(ls "$DIR" 2>/dev/null | sed -n 's/^[a-z-]*-np\([0-9]*\)\.txt$/\1/p' | sort -nu)
[ -n "$nps" ] || { echo "plot_coll: no figures in $DIR" >&2; exit 1; }

: > "$PD/barrier.dat"
made=0
for np in $nps; do
  # One table per rank count: metric bytes <median per side> (best ratio).
  # A side without figures gets an empty stand-in (one per side: best_ratios.awk
  # tells the files apart by name).
  args=()
  for s in "${sides[@]}"; do
    f="$DIR/$s-np$np.txt"
    [ -e "$f" ] || { f="$DIR/.none-$s"; : > "$f"; }
    args+=("$f")
  done
  data="$PD/medians-np$np.dat"
  awk -f bench/best_ratios.awk -v names="$(IFS='|'; echo "${sides[*]}")" -v tsv="$data" "${args[@]}" >/dev/null
  rm -f "$DIR"/.none-*
  awk -v np="$np" '$1 == "coll_barrier_lat" { print np, $3, $4, $5, $6, $7, $8 }' "$data" >> "$PD/barrier.dat"
  for metric in $(awk '$1 != "coll_barrier_lat" { print $1 }' "$data" | uniq); do
    awk -v m="$metric" '$1 == m' "$data" > "$PD/$metric-np$np.dat"
    plots=()
    for i in "${!sides[@]}"; do
      col=$((i + 3))
      if awk -v c="$col" '$c != "-" { found = 1 } END { exit !found }' "$PD/$metric-np$np.dat"; then
        plots+=("'$PD/$metric-np$np.dat' using 2:$col with linespoints ${styles[$i]} title '${titles[$i]}'")
      fi
    done
    [ ${#plots[@]} -gt 0 ] || continue
    case $metric in
      fcollect_lat|collect_lat) xl="bytes contributed by each rank" ;;
      alltoall_lat) xl="bytes per destination block" ;;
      *) xl="array size (bytes)" ;;
    esac
    gnuplot <<EOF
set terminal $TERMINAL
set output '$DIR/$metric-np$np.$EXT'
set title '${metric%_lat}, $np ranks (median over rounds; lower is better)' noenhanced
set datafile missing '-'
set logscale x 2
set logscale y
set xtics 16
set format x '%.0b%B'
set xlabel '$xl'
set ylabel 'latency per call (us)'
set grid
set key top left
plot $(IFS=,; echo "${plots[*]}")
EOF
    made=$((made + 1))
  done
done

# The barrier against the rank count.
plots=()
for i in "${!sides[@]}"; do
  col=$((i + 2))
  if awk -v c="$col" '$c != "-" && $c != "" { found = 1 } END { exit !found }' "$PD/barrier.dat"; then
    plots+=("'$PD/barrier.dat' using 1:$col with linespoints ${styles[$i]} title '${titles[$i]}'")
  fi
done
if [ ${#plots[@]} -gt 0 ]; then
  gnuplot <<EOF
set terminal $TERMINAL
set output '$DIR/coll_barrier_lat.$EXT'
set title 'barrier (median over rounds; lower is better)'
set datafile missing '-'
set logscale y
set xtics ($(echo $nps | sed 's/ /, /g'))
set xrange [$(( $(echo $nps | awk '{print $1}') - 1 )):$(( $(echo $nps | awk '{print $NF}') + 1 ))]
set xlabel 'ranks'
set ylabel 'latency per call (us)'
set grid
set key top left
plot $(IFS=,; echo "${plots[*]}")
EOF
  made=$((made + 1))
fi
echo "plot_coll: $made plots in $DIR/*.$EXT" >&2
