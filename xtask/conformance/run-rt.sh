#!/bin/bash
# usage: run-rt.sh <name> <runtime-path>
name=$1; rt=$2
out=${CONF_DIR:?set CONF_DIR to the conformance work directory}/runtime-tools-results
mkdir -p "$out"; cd $CONF_DIR/runtime-tools
log=$out/$name.log; : > $log; : > $out/$name.summary
for t in $(find validation -name '*.t' | sort); do
  echo "=== FILE $t" >> $log
  RUNTIME=$rt timeout 120 $t >> $log 2>&1 < /dev/null
  rc=$?
  echo "=== RC $rc" >> $log
  echo "$t $rc" >> $out/$name.summary
done
