# Faults during loads and training jobs, and what must hold after each one:
# the server accepts connections, gnn.graphs and gnn.jobs are consistent (no
# half-registered graph: the registry's accounting equals the sum of the
# listed graphs and every listed graph is readable; no job stuck in running),
# shared memory returns to its level before the fault (gnn.memory_used() and
# the number of DSM segments), and every row committed before the fault is
# still there.
#
# DSM segments are counted as files: the cluster uses
# dynamic_shared_memory_type = mmap, so its segments are files in
# $PGDATA/pg_dynshmem that no other cluster on the machine touches (posix
# segments in /dev/shm are shared with every cluster of the machine).  The
# reference counting, pinning and cleanup code is the same for every type.
#
# SIGKILL of any process attached to shared memory makes the postmaster
# restart every process (crash recovery): shared memory is rebuilt, and the
# loaded graphs come back from the graph store (unmapped until used); an
# interrupted load leaves no graph.
use FindBin;
use lib $FindBin::RealBin;
# its wait_for tolerates errors (a server in crash recovery): its own
use GnnTest qw(gnn_node sq wait_server dsm_files);
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = gnn_node('faults', conf => q{
dynamic_shared_memory_type = mmap
max_worker_processes = 16
max_parallel_workers_per_gather = 0
gnn.max_jobs = 3
restart_after_crash = on
});

$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	SELECT setseed(0.25);
	CREATE TABLE n AS SELECT id, (id % 4)::int AS label,
		CASE WHEN id < 80 THEN 'train' WHEN id < 300 THEN 'val' WHEN id < 700 THEN 'test' END AS split,
		(SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
		   FROM generate_series(0, 15) j)::real[] AS feat
	FROM generate_series(0, 999) id;
	CREATE TABLE e AS SELECT s.id AS src, ((s.id * 7 + k * 13) % 1000) AS dst FROM n s, generate_series(1, 5) k;
	-- big enough that a load takes a while: 2M edges
	CREATE TABLE big AS SELECT g AS src, (g * 7919) % 2000000 AS dst FROM generate_series(0::bigint, 1999999) g;
	-- a load that is certainly still scanning when it is killed: the executor path, slowed down
	CREATE FUNCTION slow(i bigint) RETURNS boolean LANGUAGE sql AS
		$$ SELECT CASE WHEN i % 2000 = 0 THEN pg_sleep(0.02) IS NOT NULL ELSE true END $$;
	CREATE VIEW slow_edges AS SELECT src, dst FROM big WHERE slow(src);
	CREATE TABLE ledger (i int PRIMARY KEY, note text);
	CREATE ROLE alice LOGIN;
	GRANT SELECT ON n, e, big, slow_edges TO alice;
	GRANT ALL ON ledger TO alice;
});
my $load_g = q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label',
	split => 'split', undirected => true, replace => true)};

sub wait_for
{
	my ($sql, $expect, $secs) = @_;
	$secs //= 60;
	my $v;
	for (1 .. $secs * 10)
	{
		my ($rc, $out, $err) = $node->psql('postgres', $sql);
		$v = $out;
		return $v if $rc == 0 && $v eq $expect;
		usleep(100_000);
	}
	return $v;
}

# a fault-free snapshot: memory, segments, committed rows
my $ledger = 0;
sub snapshot
{
	$ledger++;
	sq("INSERT INTO ledger VALUES ($ledger, 'before fault')");
	return {
		mem => sq('SELECT gnn.memory_used()'),
		files => wait_for_files(undef),
		cached => sq('SELECT count(*) FROM gnn.cache'),   # shared results: one segment each, lost in a crash too
		graphs => sq("SELECT string_agg(name || ':' || edges, ',' ORDER BY name) FROM gnn.graphs"),
		ledger => $ledger,
		models => sq('SELECT count(*) FROM gnn.models'),
		history => sq("SELECT count(*) FROM gnn.job_history WHERE state IN ('succeeded', 'failed', 'cancelled')"),
	};
}

# segments of dying processes disappear when the last mapping goes: poll a little
sub wait_for_files
{
	my ($want) = @_;
	my $n = dsm_files();
	for (1 .. 100)
	{
		last if defined $want && $n == $want;
		usleep(50_000);
		my $m = dsm_files();
		last if !defined $want && $m == $n;
		$n = $m;
	}
	return $n;
}

# the invariants after a fault; $crashed: the server restarted, graphs are gone
sub check_after
{
	my ($what, $before, %o) = @_;
	ok(wait_server(), "$what: the server accepts connections");
	is(wait_for("SELECT count(*) FROM gnn.jobs WHERE state IN ('queued', 'running')", '0', 30), '0',
		"$what: no job left running");
	is(wait_for("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gnn training'", '0', 30), '0',
		"$what: no training worker left");
	my $accounting = "SELECT gnn.memory_used() = coalesce((SELECT sum(bytes) FROM gnn.graphs WHERE state = 'memory'), 0)";

	is(sq($accounting), 't', "$what: registry accounting equals the listed graphs (nothing half-registered)");
	if ($o{crashed})
	{
		# stored graphs come back from the graph store, unmapped until their first use
		is(sq('SELECT gnn.memory_used()'), '0', "$what: after crash recovery no graph memory is in use");
		is(sq("SELECT string_agg(name || ':' || edges, ',' ORDER BY name) FROM gnn.graphs"), $before->{graphs},
			"$what: the graphs loaded before are back from the store, whole; the interrupted load's is absent");
		is(sq("SELECT count(*) FROM gnn.graphs WHERE state <> 'disk'"), '0', "$what: all of them unmapped");
	}
	else
	{
		is(sq('SELECT gnn.memory_used()'), $before->{mem}, "$what: graph memory back to its level");
		is(sq("SELECT string_agg(name || ':' || edges, ',' ORDER BY name) FROM gnn.graphs"), $before->{graphs},
			"$what: the same graphs are loaded");
	}
	# the DSM control segment is recreated at a crash restart: count only graphs
	my $lost = $o{crashed} ? ($o{graphs_lost} // 0) + $before->{cached} : 0;
	is(wait_for_files($before->{files} - $lost), $before->{files} - $lost, "$what: DSM segments back to their number");
	is(sq("SELECT count(*) FROM gnn.graphs WHERE gnn.degree(name, 0, 'both') IS NULL"), '0',
		"$what: every listed graph is readable");
	is(sq($accounting), 't', "$what: and the accounting still holds once they are mapped");
	is(sq("SELECT count(*) FROM ledger WHERE i <= $before->{ledger}"), $before->{ledger},
		"$what: committed rows are all there");
	ok(sq('SELECT count(*) FROM gnn.models') >= $before->{models}, "$what: committed models are all there");
	ok(sq("SELECT count(*) FROM gnn.job_history WHERE state IN ('succeeded', 'failed', 'cancelled')")
		  >= $before->{history}, "$what: finished job rows are all there");
}

# start a statement in its own psql; returns (harness, \stdout, \stderr)
sub start_psql
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', $sql ], '>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

# the pid of the client backend running a statement that matches $like
sub pid_of
{
	my ($like, $secs) = @_;
	return wait_for_nonempty(
		"SELECT pid FROM pg_stat_activity WHERE query LIKE '$like' AND state = 'active' "
		  . "AND pid <> pg_backend_pid() AND backend_type = 'client backend' LIMIT 1", $secs);
}

sub wait_for_nonempty
{
	my ($sql, $secs) = @_;
	for (1 .. ($secs // 30) * 20)
	{
		my ($rc, $out) = $node->psql('postgres', $sql);
		return $out if $rc == 0 && $out ne '';
		usleep(50_000);
	}
	return '';
}

sub start_long_job
{
	my ($name) = @_;
	my $id = sq("SELECT gnn.train('g', model => 'gcn', name => '$name', hidden => 16, epochs => 1000000, seed => 1)");
	wait_for("SELECT state FROM gnn.jobs WHERE id = $id", 'running');
	return $id;
}

my $t_start = time;
sq($load_g);
sq("SELECT gnn.train('g', model => 'gcn', name => 'base', hidden => 16, epochs => 5, seed => 1, wait => true)");

# ------------------------------------------------------------------ 1. gnn.max_graph_memory full
{
	my $b = snapshot();
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET gnn.max_graph_memory = '1MB'; SELECT gnn.load_graph('big', 'big')");
	like($err, qr/ERROR:  graph "big" needs \d+ MB of shared memory, but only \d+ MB of gnn.max_graph_memory \(1 MB\) is free/,
		'max_graph_memory: a load over the limit fails saying how much it needs');
	($rc, $out, $err) = $node->psql('postgres',
		"SET gnn.max_graph_memory = '1MB'; SELECT gnn.load_graph('g', 'big', replace => true)");
	like($err, qr/needs \d+ MB of shared memory/, 'max_graph_memory: so does a replace');
	check_after('max_graph_memory full', $b);
	is(sq("SELECT name || ':' || edges FROM gnn.graphs WHERE name = 'g'"), $b->{graphs}, 'max_graph_memory: a failed replace keeps the old graph');
}

# ------------------------------------------------------------------ 2. a failing compute backend
{
	my $b = snapshot();
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET gnn.fault_backend_calls = 30; SELECT gnn.train('g', model => 'gcn', name => 'faulty', epochs => 50, wait => true)");
	like($err, qr/training job \d+ failed: .*injected fault/, 'fault_backend_calls: the job fails with its error');
	check_after('failing backend', $b);
	is(sq("SELECT count(*) FROM gnn.models WHERE name = 'faulty'"), '0', 'failing backend: no model row');
	is(sq("SELECT state FROM gnn.job_history WHERE model_name = 'faulty'"), 'failed', 'failing backend: history says failed');
}

# ------------------------------------------------------------------ 3. cancel and terminate a loading backend
for my $how ('pg_cancel_backend', 'pg_terminate_backend')
{
	my $b = snapshot();
	my ($h, $out, $err) = start_psql("SELECT gnn.load_graph('slow', 'slow_edges')");
	my $pid = pid_of('%slow_edges%');
	ok($pid, "$how during a load: the load is running (pid $pid)");
	usleep(300_000);
	sq("SELECT $how($pid)");
	$h->finish;
	like($$err, $how eq 'pg_cancel_backend' ? qr/canceling statement due to user request/ :
		qr/terminating connection due to administrator command/, "$how during a load: the load stops");
	check_after("$how during a load", $b);
}

# the direct heap-scan path, killed somewhere in scan or build
{
	my $b = snapshot();
	my ($h, $out, $err) = start_psql("SELECT gnn.load_graph('bigt', 'big')");
	my $pid = pid_of(q{%gnn.load_graph(''bigt''%});
	usleep(200_000);
	sq("SELECT pg_terminate_backend($pid)");
	$h->finish;
	# it may have finished before the signal: then drop it and compare
	$node->psql('postgres', "SELECT gnn.drop_graph('bigt', true)");
	check_after('pg_terminate_backend during a heap-scan load', $b);
}

# ------------------------------------------------------------------ 4. terminate / SIGTERM a training worker
{
	my $b = snapshot();
	my $id = start_long_job('termed');
	sq("SELECT pg_terminate_backend(pid) FROM gnn.jobs WHERE id = $id");
	is(wait_for("SELECT state FROM gnn.jobs WHERE id = $id", 'failed'), 'failed', 'terminated worker: the job fails');
	check_after('pg_terminate_backend of a training worker', $b);
}

# ------------------------------------------------------------------ 5. terminate the session waiting in gnn.train
{
	my $b = snapshot();
	my ($h, $out, $err) = start_psql(
		"SELECT gnn.train('g', model => 'gcn', name => 'waited', hidden => 16, epochs => 1000000, wait => true)");
	my $pid = pid_of(q{%name => ''waited''%});
	my $id = wait_for_nonempty("SELECT id FROM gnn.jobs WHERE model_name = 'waited' AND state = 'running'");
	ok($id, "terminate the waiting session: job $id runs");
	sq("SELECT pg_terminate_backend($pid)");
	$h->finish;
	is(wait_for("SELECT state FROM gnn.jobs WHERE id = $id", 'cancelled', 30), 'cancelled',
		'terminate the waiting session: its job is cancelled');
	check_after('pg_terminate_backend of a session waiting in gnn.train', $b);
}

# ------------------------------------------------------------------ 6. SIGKILL of a loading backend (crash restart)
{
	my $b = snapshot();
	my $graphs = sq('SELECT count(*) FROM gnn.graphs');
	my ($h, $out, $err) = start_psql("SELECT gnn.load_graph('slow', 'slow_edges')");
	my $pid = pid_of('%slow_edges%');
	ok($pid, "SIGKILL during a load: the load is running (pid $pid)");
	usleep(300_000);
	kill 'KILL', $pid;
	$h->finish;
	check_after('SIGKILL of a loading backend', $b, crashed => 1, graphs_lost => $graphs);
	sq($load_g);
}

# ------------------------------------------------------------------ 7. SIGKILL of a training worker while another session loads
{
	my $b = snapshot();
	my $graphs = sq('SELECT count(*) FROM gnn.graphs');
	my $id = start_long_job('killed');
	my ($h, $out, $err) = start_psql("SET ROLE alice; SELECT gnn.load_graph('slow', 'slow_edges')");
	ok(pid_of('%slow_edges%'), 'SIGKILL of a worker: a load runs meanwhile');
	my $wpid = sq("SELECT pid FROM gnn.jobs WHERE id = $id");
	kill 'KILL', $wpid;
	$h->finish;
	check_after('SIGKILL of a training worker during a load', $b, crashed => 1, graphs_lost => $graphs);
	is(sq("SELECT state FROM gnn.jobs WHERE id = $id"), 'failed', 'SIGKILL of a worker: the job shows as failed');
	sq($load_g);
}

# ------------------------------------------------------------------ 8. immediate restart during a load and a job
{
	my $b = snapshot();
	my $graphs = sq('SELECT count(*) FROM gnn.graphs');
	my $id = start_long_job('restarted');
	my ($h, $out, $err) = start_psql("SELECT gnn.load_graph('slow', 'slow_edges')");
	ok(pid_of('%slow_edges%'), 'immediate restart: a load runs meanwhile');
	$node->restart(mode => 'immediate');
	$h->finish;
	check_after('immediate restart during a load and a job', $b, crashed => 1, graphs_lost => $graphs);
	is(sq("SELECT state FROM gnn.jobs WHERE id = $id"), 'failed', 'immediate restart: the job shows as failed');
	sq($load_g);
	sq("SELECT gnn.train('g', model => 'gcn', name => 'after', hidden => 16, epochs => 3, wait => true)");
	is(sq("SELECT state FROM gnn.job_history WHERE id = $id"), 'failed', 'immediate restart: the history table says so too');
	is(sq("SELECT count(*) FROM gnn.models WHERE name IN ('base', 'after')"), '2', 'models trained before and after the restart');
}

note('004_faults took ' . (time - $t_start) . ' s');
$node->stop;
done_testing();
