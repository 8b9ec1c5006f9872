#!/bin/bash
# samples once per second: redis-server main thread CPU% (from /proc), keel-bench CPU%, machine busy% (of 2 cores)
out=$1; hz=$(getconf CLK_TCK)
while [ -z "$cr" ]; do cr=$(pgrep -n -f 'compare-redis.sh eviction-storm'); sleep 0.1; done
while [ -z "$rp" ]; do rp=$(pgrep -n -x redis-server -P $cr); sleep 0.1; done
echo "# redis pid $rp" > $out
prev_r=0; prev_b=0; prev_w=0; read -r _ a b c d e f g h _ < /proc/stat; prev_tot=$((a+b+c+d+e+f+g+h)); prev_idle=$((d+e))
while kill -0 $rp 2>/dev/null; do
  sleep 1
  r=$(awk '{print $14+$15}' /proc/$rp/task/$rp/stat 2>/dev/null) || break
  w=$(awk '{print $2}' /proc/$rp/task/$rp/schedstat 2>/dev/null)
  bp=$(pgrep -n -x keel-bench -P $cr); bcpu=0; [ -n "$bp" ] && bcpu=$(awk '{print $14+$15}' /proc/$bp/stat 2>/dev/null)
  read -r _ a b c d e f g h _ < /proc/stat; tot=$((a+b+c+d+e+f+g+h)); idle=$((d+e))
  echo "$(date +%s) redis_main=$(( (r-prev_r)*100/hz )) bench=$(( (bcpu-prev_b)*100/hz )) machine=$(( 200*((tot-prev_tot)-(idle-prev_idle))/(tot-prev_tot) )) redis_runq_wait_ms=$(( (w-prev_w)/1000000 ))" >> $out
  prev_r=$r; prev_b=$bcpu; prev_w=$w; prev_tot=$tot; prev_idle=$idle
done
