# benches/lib/java-bookie.sh: the stock Java bookie as the benchmarks' peer, sourced by
# benches/compare.sh and benches/tls-cost.sh so both measure the same Java set-up.
#
#   jb_start_zk DIR PORT CP        ZooKeeper (ZooKeeperServerMain from the Maven classpath CP)
#                                  on 127.0.0.1:PORT, data in DIR/zk; waits for `imok`
#   jb_write_conf DIR JPORT ZPORT [KEY=VALUE..]
#                                  DIR/java/bk_server.conf: the settings equivalent to our
#                                  bookie's in the benchmarks (journal written and fsynced
#                                  before every ack, DbLedgerStorage, 256 MiB write and
#                                  read-ahead caches, the disk-full thresholds at 0.99/0.98),
#                                  then the extra keys
#   jb_start_java DIR CP [LOGGER=LEVEL..]
#                                  BookieShell initnewcluster, then org.apache.bookkeeper.server.Main
#                                  with 1 GiB heap and 1 GiB direct memory; log DIR/java.log;
#                                  root logger at warn plus the given loggers; sets JAVA_PID
#
# The caller defines die() and a PIDS array (its EXIT trap kills them); every process started
# here is appended to PIDS.

jb_start_zk() {
  local dir=$1 port=$2 cp=$3 r=
  mkdir -p "$dir/zk"
  java -Xmx256m -Dzookeeper.admin.enableServer=false -Dzookeeper.4lw.commands.whitelist=ruok \
    -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$port" "$dir/zk" >"$dir/zk.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 100); do
    # (bounded: a ZooKeeper that accepts before it serves would leave `cat` waiting)
    r=$(timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$port"' && echo ruok >&3 && cat <&3' 2>/dev/null || true)
    [[ "$r" == imok ]] && return 0
    sleep 0.2
  done
  die "ZooKeeper did not start (log: $dir/zk.log)"
}

jb_write_conf() {
  local dir=$1 jport=$2 zport=$3
  shift 3
  mkdir -p "$dir/java/journal" "$dir/java/ledgers"
  {
    cat <<CONF
# Equivalent settings to our bookie: journal written and fsynced before every ack.
bookiePort=$jport
advertisedAddress=127.0.0.1
allowLoopback=true
journalDirectories=$dir/java/journal
ledgerDirectories=$dir/java/ledgers
metadataServiceUri=zk+hierarchical://127.0.0.1:$zport/ledgers
zkServers=127.0.0.1:$zport
journalWriteData=true
journalSyncData=true
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
nettyMaxFrameSizeBytes=5253120
httpServerEnabled=false
diskUsageThreshold=0.99
diskUsageWarnThreshold=0.98
dbStorage_writeCacheMaxSizeMb=256
dbStorage_readAheadCacheMaxSizeMb=256
CONF
    if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; fi
  } >"$dir/java/bk_server.conf"
}

jb_start_java() {
  local dir=$1 cp=$2 loggers=""
  shift 2
  for l in "$@"; do loggers+="<Logger name=\"${l%%=*}\" level=\"${l#*=}\"/>"; done
  cat >"$dir/java/log4j2.xml" <<XML
<Configuration status="warn"><Appenders><Console name="c" target="SYSTEM_OUT"><PatternLayout pattern="%d %p %c{1} %m%n"/></Console></Appenders>
<Loggers>$loggers<Root level="warn"><AppenderRef ref="c"/></Root></Loggers></Configuration>
XML
  local opts=(-Xms1g -Xmx1g -XX:MaxDirectMemorySize=1g -Dlog4j2.configurationFile="$dir/java/log4j2.xml")
  java "${opts[@]}" -cp "$cp" org.apache.bookkeeper.bookie.BookieShell -conf "$dir/java/bk_server.conf" \
    initnewcluster >"$dir/java-init.log" 2>&1 \
    || die "Java metadata init (BookieShell initnewcluster) failed (log: $dir/java-init.log)"
  java "${opts[@]}" -cp "$cp" org.apache.bookkeeper.server.Main --conf "$dir/java/bk_server.conf" \
    >"$dir/java.log" 2>&1 &
  JAVA_PID=$!
  PIDS+=("$JAVA_PID")
}
