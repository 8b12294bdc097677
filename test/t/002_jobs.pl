# Training jobs at the server level: background workers, concurrency, cancel
# (gnn.cancel and cancelling the waiting statement), a killed worker, a
# restart mid-job, roles, the device fallback notice and fault injection.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use Time::HiRes qw(usleep);

my $node = gnn_node('jobs', conf => q{
max_worker_processes = 24
gnn.max_jobs = 3
restart_after_crash = on
});

# a planted-partition graph, small enough for quick jobs
$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	SELECT setseed(0.5);
	CREATE TABLE n AS SELECT id, (id % 4)::int AS label,
		CASE WHEN id < 80 THEN 'train' WHEN id < 300 THEN 'val' WHEN id < 700 THEN 'test' END AS split,
		(SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
		   FROM generate_series(0, 15) j)::real[] AS feat
	FROM generate_series(0, 999) id;
	CREATE TABLE e AS SELECT s.id AS src,
		CASE WHEN random() < 0.8 THEN ((random() * 249)::int * 4 + s.id % 4) % 1000 ELSE (random() * 999)::int END AS dst
	FROM n s, generate_series(1, 5) k;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE nologin NOLOGIN;
	GRANT SELECT ON n, e TO alice, bob, nologin;
});
my $load = q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label',
	split => 'split', undirected => true, replace => true)};
$node->safe_psql('postgres', $load);

sub job_state
{
	my ($id) = @_;
	return $node->safe_psql('postgres', "SELECT state FROM gnn.jobs WHERE id = $id");
}

# ------------------------------------------------------------------ a job, its notice, its worker
my ($rc, $out, $err) = $node->psql('postgres',
	"SELECT gnn.train('g', model => 'gcn', name => 'm1', hidden => 16, epochs => 30, seed => 1, wait => true)");
is($rc, 0, 'a job trains to the end with wait => true');
like($err, qr/NOTICE:  training job \d+ runs on the CPU: (this machine has no GPU|gnn was built without CUDA|no usable GPU)/,
	'no GPU: CPU fallback with a NOTICE that says why');
unlike($err, qr/InsufficientDriver|insufficient for CUDA runtime/, 'a machine without a GPU is not reported as a broken driver');
{
	my ($qrc, $qout, $qerr) = $node->psql('postgres',
		"SET \"gnn.verbose\" = off; SELECT gnn.train('g', model => 'gcn', name => 'm_quiet', hidden => 16, epochs => 2, seed => 1, wait => true)");
	is($qrc, 0, 'a job with gnn.verbose = off') or diag($qerr);
	unlike($qerr, qr/runs on the CPU: (this machine has no GPU|gnn was built without CUDA)/,
		'and with gnn.verbose = off it says nothing');
	$node->psql('postgres', "SELECT gnn.drop_model('m_quiet')");
}
# gnn.wait of a job gnn.train already waited for repeats no progress line (#39)
{
	my ($wrc, $wout, $werr) = $node->psql('postgres',
		"SELECT state FROM gnn.wait(gnn.train('g', model => 'gcn', name => 'm_twice', hidden => 16, epochs => 3, seed => 1, wait => true))");
	my $done = () = $werr =~ /epoch 3 of 3.*done/g;
	is($done, 1, 'the last progress line is said once, not again by gnn.wait') or diag($werr);
	$node->psql('postgres', "SELECT gnn.drop_model('m_twice')");
}
is($node->safe_psql('postgres', "SELECT state || ' ' || device FROM gnn.jobs WHERE id = $out"),
	'succeeded cpu', 'the job succeeded on the CPU');

# a long job shows in pg_stat_activity and can be cancelled with gnn.cancel
my $long = $node->safe_psql('postgres',
	"SELECT gnn.train('g', model => 'gcn', name => 'long', hidden => 16, epochs => 1000000, seed => 1)");
is(wait_for("SELECT state FROM gnn.jobs WHERE id = $long", 'running'), 'running', 'a long job runs');
like($node->safe_psql('postgres',
		"SELECT backend_type || ': ' || query FROM pg_stat_activity WHERE backend_type = 'gnn training'"),
	qr/gnn training: gnn: training job $long: gcn "long" on graph "g"/, 'the worker shows in pg_stat_activity');
wait_for("SELECT epoch > 0 FROM gnn.jobs WHERE id = $long", 't');
ok($node->safe_psql('postgres', "SELECT count(*) > 0 FROM gnn.training_log WHERE job = $long") eq 't'
	  || wait_for("SELECT count(*) > 0 FROM gnn.training_log WHERE job = $long", 't') eq 't',
	'progress reaches the training log while the job runs');
my $t0 = [Time::HiRes::gettimeofday()];
is($node->safe_psql('postgres', "SELECT gnn.cancel($long)"), 't', 'gnn.cancel stops a running job');
my $dt = Time::HiRes::tv_interval($t0);
ok($dt < 3, "cancel took ${dt}s");
is(job_state($long), 'cancelled', 'the job is marked cancelled');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gnn training'"),
	'0', 'its worker is gone');

# concurrent jobs, bounded by gnn.max_jobs
my @jobs;
push @jobs, $node->safe_psql('postgres',
	"SELECT gnn.train('g', model => 'gcn', name => 'c$_', epochs => 1000000, seed => $_)") for 1 .. 3;
($rc, $out, $err) = $node->psql('postgres', "SELECT gnn.train('g', model => 'gcn', name => 'c4', epochs => 5)");
like($err, qr/3 training jobs are running or queued, the most gnn.max_jobs allows/, 'gnn.max_jobs refuses more jobs');
is(wait_for("SELECT count(*) FROM gnn.jobs WHERE state = 'running'", '3'), '3', 'three jobs run at once');
$node->safe_psql('postgres', "SELECT gnn.cancel($_)") for @jobs;
is($node->safe_psql('postgres', "SELECT string_agg(DISTINCT state, ',') FROM gnn.jobs WHERE id IN (" . join(',', @jobs) . ")"),
	'cancelled', 'all three cancelled');

# cancelling the waiting statement cancels the job
my $bg = $node->background_psql('postgres');
$bg->query_until(qr/started/, q{
	\echo started
	SELECT gnn.train('g', model => 'gcn', name => 'waited', epochs => 1000000, seed => 1, wait => true);
});
my $waited = wait_for("SELECT count(*) FROM gnn.jobs WHERE model_name = 'waited' AND state = 'running'", '1');
my $wid = $node->safe_psql('postgres', "SELECT id FROM gnn.jobs WHERE model_name = 'waited'");
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%name => ''waited''%' AND pid <> pg_backend_pid() AND backend_type = 'client backend'");
is(wait_for("SELECT state FROM gnn.jobs WHERE id = $wid", 'cancelled'), 'cancelled',
	'pg_cancel_backend of the waiting session cancels the job');
eval { $bg->quit; };   # psql may have exited on the cancelled statement already

# gnn.wait: interrupting it cancels a job this session started, not one started elsewhere
($rc, $out, $err) = $node->psql('postgres', qq{
	SELECT gnn.train('g', model => 'gcn', name => 'timed_out', epochs => 1000000, seed => 1) AS j \\gset
	SET statement_timeout = '2s';
	SELECT * FROM gnn.wait(:j);
});
like($err, qr/statement timeout/, 'statement_timeout interrupts gnn.wait');
my $tj = $node->safe_psql('postgres', "SELECT id FROM gnn.jobs WHERE model_name = 'timed_out'");
is(wait_for("SELECT state FROM gnn.jobs WHERE id = $tj", 'cancelled'), 'cancelled',
	'and cancels the job the session started');
for my $how ('pg_cancel_backend', 'pg_terminate_backend')
{
	my $w = $node->background_psql('postgres');
	$w->query_until(qr/started/, qq{
		SELECT gnn.train('g', model => 'gcn', name => 'w_$how', epochs => 1000000, seed => 1) AS j \\gset
		\\echo started
		SELECT * FROM gnn.wait(:j);
	});
	my $id = $node->safe_psql('postgres', "SELECT id FROM gnn.jobs WHERE model_name = 'w_$how'");
	is(wait_for("SELECT state FROM gnn.jobs WHERE id = $id", 'running'), 'running', "$how: the job runs");
	wait_for("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%gnn.wait(%' AND backend_type = 'client backend' AND pid <> pg_backend_pid()", '1');
	$node->safe_psql('postgres',
		"SELECT $how(pid) FROM pg_stat_activity WHERE query LIKE '%gnn.wait(%' AND pid <> pg_backend_pid() AND backend_type = 'client backend'");
	is(wait_for("SELECT state FROM gnn.jobs WHERE id = $id", 'cancelled'), 'cancelled',
		"$how of the session waiting in gnn.wait cancels its job");
	eval { $w->quit; };
}
# a job started elsewhere (say by pg_cron) goes on when a watcher's wait is interrupted
my $other = $node->safe_psql('postgres', "SELECT gnn.train('g', model => 'gcn', name => 'watched', epochs => 1000000, seed => 1)");
wait_for("SELECT state FROM gnn.jobs WHERE id = $other", 'running');
($rc, $out, $err) = $node->psql('postgres', "SET statement_timeout = '1s'; SELECT * FROM gnn.wait($other)");
like($err, qr/statement timeout/, 'a watcher\'s gnn.wait times out');
usleep(500_000);
is(job_state($other), 'running', 'and the job it watched, started by another session, runs on');
($rc, $out, $err) = $node->psql('postgres', "SET statement_timeout = '1s'; SELECT * FROM gnn.wait($other, cancel_on_interrupt => true)");
is(wait_for("SELECT state FROM gnn.jobs WHERE id = $other", 'cancelled'), 'cancelled',
	'unless it asked for cancel_on_interrupt => true');

# ------------------------------------------------------------------ roles
$node->safe_psql('postgres', "SET ROLE alice; SELECT gnn.load_graph('ag', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split')");
my $aj = $node->safe_psql('postgres',
	"SET ROLE alice; SELECT gnn.train('ag', model => 'gcn', name => 'alice_model', epochs => 5, seed => 1, wait => true)");
is($node->safe_psql('postgres', "SELECT owner FROM gnn.models WHERE name = 'alice_model'"), 'alice',
	'the model belongs to the role that trained it');
is($node->safe_psql('postgres', "SELECT usename FROM pg_stat_activity WHERE backend_type = 'gnn training' LIMIT 1")
	, '', 'no worker left');
is($node->safe_psql('postgres', "SET ROLE bob; SELECT count(*) FROM gnn.models WHERE name = 'alice_model'"), '0',
	'bob cannot see alice\'s model');
is($node->safe_psql('postgres', "SET ROLE bob; SELECT count(*) FROM gnn.jobs WHERE id = $aj"), '0',
	'bob cannot see alice\'s job');
is($node->safe_psql('postgres', "SET ROLE bob; SELECT count(*) FROM gnn.training_log WHERE job = $aj"), '0',
	'nor its training log');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.embedding('alice_model', 1)");
like($err, qr/model "alice_model" does not exist/, 'bob cannot use alice\'s model');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.drop_model('alice_model')");
like($err, qr/model "alice_model" does not exist/, 'bob cannot drop alice\'s model');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.train('ag', model => 'gcn')");
like($err, qr/graph "ag" does not exist/, 'bob cannot train on alice\'s graph (names are per role)');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.cancel($aj)");
like($err, qr/job $aj does not exist/, 'bob cannot cancel alice\'s job');
is($node->safe_psql('postgres', "SET ROLE alice; SELECT array_length(gnn.embedding('alice_model', 1), 1) > 0"), 't',
	'alice uses her model');
$node->safe_psql('postgres', "SET ROLE nologin; SELECT gnn.load_graph('ng', 'e')");
($rc, $out, $err) = $node->psql('postgres', "SET ROLE nologin; SELECT gnn.train('ng', model => 'gcn')");
like($err, qr/role "nologin" cannot log in, so it cannot run a training job/, 'a role without LOGIN is told why');

# ------------------------------------------------------------------ dump and restore
my $dump = "$PostgreSQL::Test::Utils::tmp_check/gnn.dump";
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump of a database with models');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
is($node->safe_psql('restored', 'SELECT count(*), sum(length(weights)) FROM gnn.models'),
	$node->safe_psql('postgres', 'SELECT count(*), sum(length(weights)) FROM gnn.models'),
	'models survive dump and restore, weights included');
is($node->safe_psql('restored', 'SELECT count(*) FROM gnn.job_history'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM gnn.job_history'), 'and so does the job history');
$node->safe_psql('restored', $load);
is($node->safe_psql('restored', "SELECT array_length(gnn.embedding('m1', 1), 1) > 0"), 't',
	'a restored model works once its graph is loaded');

# ------------------------------------------------------------------ faults
# a failing backend (fault injection works without a GPU)
($rc, $out, $err) = $node->psql('postgres',
	"SET gnn.fault_backend_calls = 50; SELECT gnn.train('g', model => 'gcn', name => 'faulty', epochs => 100, wait => true)");
like($err, qr/training job \d+ failed: training failed on cpu: .*injected fault/, 'a failing backend fails the job with its error');
is($node->safe_psql('postgres', "SELECT state FROM gnn.jobs WHERE model_name = 'faulty'"), 'failed', 'marked failed');
is($node->safe_psql('postgres', "SELECT count(*) FROM gnn.models WHERE name = 'faulty'"), '0', 'and no model row');

# SIGKILL of the worker: the job fails, the server recovers
my $kj = $node->safe_psql('postgres',
	"SELECT gnn.train('g', model => 'gcn', name => 'killed', epochs => 1000000, seed => 1)");
wait_for("SELECT state FROM gnn.jobs WHERE id = $kj", 'running');
my $kpid = $node->safe_psql('postgres', "SELECT pid FROM gnn.jobs WHERE id = $kj");
kill 'KILL', $kpid;
my $ok = 0;
for (1 .. 300)
{
	($rc, $out, $err) = $node->psql('postgres', 'SELECT 1');
	if ($rc == 0) { $ok = 1; last; }
	usleep(100_000);
}
ok($ok, 'the server accepts connections after the worker was killed');
# a connection can succeed before the postmaster has noticed the death and reset every
# backend (a loaded machine): poll until the job reads as failed, through the restart
my $kstate = '';
for (1 .. 600)
{
	my ($krc, $kout) = $node->psql('postgres', "SELECT state FROM gnn.jobs WHERE id = $kj");
	$kstate = $kout // '' if $krc == 0;
	last if $krc == 0 && $kstate eq 'failed';
	usleep(100_000);
}
is($kstate, 'failed', 'the killed job ends as failed');
like($node->safe_psql('postgres', "SELECT error FROM gnn.jobs WHERE id = $kj"), qr/worker died or the server restarted/,
	'with a message');
is($node->safe_psql('postgres', "SELECT count(*) FROM gnn.models WHERE name IN ('m1', 'alice_model')"), '2',
	'models committed before the crash are all there');

# restart (immediate) during a job
$node->safe_psql('postgres', $load);
my $rj = $node->safe_psql('postgres',
	"SELECT gnn.train('g', model => 'gcn', name => 'restarted', epochs => 1000000, seed => 1)");
wait_for("SELECT state FROM gnn.jobs WHERE id = $rj", 'running');
$node->restart(mode => 'immediate');
is(job_state($rj), 'failed', 'a job running at a restart ends as failed');
# the next gnn.train records it in the table too
$node->safe_psql('postgres', $load);
$node->safe_psql('postgres', "SELECT gnn.train('g', model => 'gcn', name => 'after', epochs => 3, wait => true)");
is($node->safe_psql('postgres', "SELECT state FROM gnn.job_history WHERE id = $rj"), 'failed',
	'and the history table says so');

$node->stop;
done_testing();
