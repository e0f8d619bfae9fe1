#!/bin/bash
# usage: run-contest.sh <name> <runtime-path>   (RUNTIME_KIND taken from env)
name=$1; rt=$2
cd ${CONF_DIR:?set CONF_DIR to the conformance work directory}/youki
mkdir -p $CONF_DIR/contest; log=$CONF_DIR/contest/$name.log; : > $log
for g in $(./contest list 2>/dev/null); do
  echo "=== GROUP $g $(date +%T)" >> $log
  timeout -k 10 300 ./contest run --runtime "$rt" --runtimetest ./runtimetest -t $g >> $log 2>&1 < /dev/null
  echo "=== RC $? $(date +%T)" >> $log
done
echo "=== FINISHED" >> $log
