# Two roles against each other: bob tries every write of the extension's
# tables and every API call against alice's objects, and nothing of alice's
# changes, leaks or blocks.  Graph and model names are per role, ids come
# from sequences nobody else can use, versions are counted per owner, a
# superuser's lookups by name find only its own objects.  Also: the memory
# of a dropped graph that a running job still holds stays counted.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $node = gnn_node('roles', conf => "max_worker_processes = 16\ngnn.max_jobs = 4");

sq(q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	SELECT setseed(0.5);
	CREATE TABLE n AS SELECT id, (id % 3)::int AS label,
		CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split,
		ARRAY[(id % 3 = 0)::int + random(), (id % 3 = 1)::int + random(), random()]::real[] AS feat
	FROM generate_series(0, 299) id;
	CREATE TABLE e AS SELECT s.id AS src, ((random() * 99)::int * 3 + s.id % 3) % 300 AS dst
	FROM n s, generate_series(1, 3) k;
	CREATE TABLE e_small AS SELECT * FROM e WHERE src < 100 AND dst < 100;
	GRANT SELECT ON n, e, e_small TO alice, bob;
	GRANT CREATE ON SCHEMA public TO alice, bob;
});

# ------------------------------------------------------------------ alice's objects
as_ok('alice', q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split')});
my $aj1 = as_ok('alice', q{SELECT gnn.train('g', model => 'gcn', name => 'm', hidden => 4, epochs => 3, seed => 1, wait => true)});
my $alice_pred = as_ok('alice', q{SELECT string_agg(id || ':' || label, ',' ORDER BY id) FROM gnn.predict('m')});
my $alice_nodes = as_ok('alice', q{SELECT nodes FROM gnn.graphs});
my $long = as_ok('alice', q{SELECT gnn.train('g', model => 'gcn', name => 'long', hidden => 4, epochs => 1000000)});
is(wait_for("SELECT state FROM gnn.jobs WHERE id = $long", 'running'), 'running', 'alice has a running job');

# ------------------------------------------------------------------ writes of the catalog tables
my @writes = (
	[ 'INSERT INTO gnn.job_history (id, graph, model_name, model, task, owner, state) SELECT g, \'x\', \'x\', \'gcn\', \'node_classification\', \'bob\', \'failed\' FROM generate_series(1, 50) g', 'job_history' ],
	[ 'INSERT INTO gnn.job_history (id, graph, model_name, model, task, owner, state) VALUES (999, \'x\', \'x\', \'gcn\', \'node_classification\', \'alice\', \'failed\')', 'job_history' ],
	[ 'UPDATE gnn.job_history SET state = \'failed\'', 'job_history' ],
	[ 'DELETE FROM gnn.job_history', 'job_history' ],
	[ 'TRUNCATE gnn.job_history', 'job_history' ],
	[ 'INSERT INTO gnn.training_log (job, epoch, owner) SELECT g, 1, \'bob\' FROM generate_series(1, 50) g', 'training_log' ],
	[ 'UPDATE gnn.training_log SET loss = 0', 'training_log' ],
	[ 'DELETE FROM gnn.training_log', 'training_log' ],
	[ 'INSERT INTO gnn.models (name, version, graph, model, task, params, metrics, owner, weights) VALUES (\'m\', 99, \'g\', \'gcn\', \'node_classification\', \'{}\', \'{}\', \'bob\', \'\\x00\')', 'models' ],
	[ 'INSERT INTO gnn.models (name, version, graph, model, task, params, metrics, owner, weights) VALUES (\'m\', 2, \'g\', \'gcn\', \'node_classification\', \'{}\', \'{}\', \'alice\', \'\\x00\')', 'models' ],
	[ 'UPDATE gnn.models SET weights = \'\\x00\'', 'models' ],
	[ 'DELETE FROM gnn.models', 'models' ],
	[ 'SELECT nextval(\'gnn.job_id_seq\')', 'job_id_seq' ],
	[ 'SELECT setval(\'gnn.job_id_seq\', 1)', 'job_id_seq' ],
	[ 'SELECT nextval(\'gnn.model_id_seq\')', 'model_id_seq' ],
	[ 'INSERT INTO gnn.deployments (owner, name, version, strategy) VALUES (\'alice\', \'m\', 1, \'specific\')', 'deployments' ],
	[ 'UPDATE gnn.deployments SET rolled_back_at = now()', 'deployments' ],
	[ 'DELETE FROM gnn.deployments', 'deployments' ],
	[ 'UPDATE gnn.models SET deployed = true', 'models' ],
	[ 'ALTER TABLE gnn.models DISABLE ROW LEVEL SECURITY', 'models' ],
	[ 'CREATE POLICY bobs ON gnn.models USING (true)', 'models' ],
	[ 'ALTER TABLE gnn.job_history DROP CONSTRAINT job_history_pkey', 'job_history' ],
);
for my $w (@writes)
{
	my ($sql, $what) = @$w;
	my ($rc, $out, $err) = as('bob', $sql);
	isnt($rc, 0, "bob cannot: $sql");
	like($err, qr/permission denied|must be owner/, "  and is told it is not allowed ($what)");
	unlike($err, qr/duplicate key|already exists|alice/, '  without learning what exists');
}
is(sq('SELECT count(*) FROM gnn.job_history WHERE owner = \'bob\'::regrole'), '0', 'no row was planted');
is(sq('SELECT count(*) FROM gnn.models'), '1', 'alice\'s one model is all there is');

# ------------------------------------------------------------------ API calls on alice's names
# every call that takes a graph or model name answers bob exactly as for a name nobody has
my @calls = (
	"SELECT gnn.degree('%s', 1)",
	"SELECT * FROM gnn.neighbors('%s', 1)",
	"SELECT * FROM gnn.sample_neighbors('%s', ARRAY[1]::bigint[], ARRAY[2])",
	"SELECT * FROM gnn.random_walk('%s', ARRAY[1]::bigint[], 3)",
	"SELECT * FROM gnn.partition('%s', 2)",
	"SELECT * FROM gnn.partition_stats('%s')",
	"SELECT gnn.drop_graph('%s')",
	"SELECT gnn.train('%s', model => 'gcn', epochs => 1)",
);
my @model_calls = (
	"SELECT gnn.embedding('%s', 1)",
	"SELECT * FROM gnn.predict('%s')",
	"SELECT * FROM gnn.similar('%s', 1)",
	"SELECT gnn.embed('%s', 'stolen')",
	"SELECT gnn.drop_model('%s')",
	"SELECT * FROM gnn._embedding_rows('%s')",
	"SELECT gnn.deploy('%s', 1)",
	"SELECT gnn.deploy('%s', strategy => 'rollback')",
	"SELECT * FROM gnn.recommend('%s', 1)",
	"SELECT gnn.score('%s', 1, 2)",
);
for my $c (@calls)
{
	my (undef, undef, $err_g) = as('bob', sprintf($c, 'g'));
	my (undef, undef, $err_x) = as('bob', sprintf($c, 'g'));
	my (undef, undef, $err_none) = as('bob', sprintf($c, 'nobody_has_this'));
	like($err_g, qr/graph "g" does not exist/, 'bob: ' . sprintf($c, 'g'));
	(my $norm = $err_none) =~ s/nobody_has_this/g/g;
	is($err_g, $norm, '  the same answer as for a name nobody has');
}
for my $c (@model_calls)
{
	my (undef, undef, $err_m) = as('bob', sprintf($c, 'm'));
	my (undef, undef, $err_none) = as('bob', sprintf($c, 'nobody_has_this'));
	like($err_m, qr/model "m" does not exist/, 'bob: ' . sprintf($c, 'm'));
	(my $norm = $err_none) =~ s/nobody_has_this/m/g;
	is($err_m, $norm, '  the same answer as for a name nobody has');
}
for my $c ("SELECT * FROM gnn.wait($long)", "SELECT gnn.cancel($long)", "SELECT * FROM gnn.wait($long, '1 s')")
{
	my ($rc, $out, $err) = as('bob', $c);
	like($err, qr/job $long does not exist/, "bob: $c");
}
is((as('bob', 'SELECT count(*) FROM gnn.jobs'))[1], '0', 'bob sees no job');
is((as('bob', 'SELECT count(*) FROM gnn.graphs'))[1], '0', 'nor a graph');
is((as('bob', 'SELECT count(*) FROM gnn.models'))[1], '0', 'nor a model');

# bob's own objects under alice's names: no conflict, nothing of alice's changes
is((as('bob', q{SELECT edges FROM gnn.load_graph('g', 'e_small')}))[1], sq('SELECT count(DISTINCT (src, dst)) FROM e_small'),
	'bob loads his own "g"');
as_ok('bob', q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', replace => true)});
my $bj = as_ok('bob', q{SELECT gnn.train('g', model => 'graphsage', name => 'm', hidden => 3, epochs => 2, seed => 2, wait => true)});
ok($bj > $aj1, "bob's job gets a fresh id ($bj)");
is(sq("SELECT owner || ' ' || version FROM gnn.models WHERE job = $bj"), 'bob 1', 'bob\'s "m" is his version 1');
is((as('bob', q{SELECT array_length(gnn.embedding('m', 1), 1)}))[1], '3', 'bob\'s "m" answers for bob');
is((as('bob', q{SELECT gnn.drop_model('m')}))[1], 't', 'bob drops his "m"');
is(as_ok('alice', q{SELECT string_agg(id || ':' || label, ',' ORDER BY id) FROM gnn.predict('m')}), $alice_pred,
	'alice\'s model answers as before');
is(as_ok('alice', q{SELECT nodes FROM gnn.graphs}), $alice_nodes, 'alice\'s graph is unchanged');
is((as('bob', q{SELECT gnn.drop_graph('g')}))[1], 't', 'bob drops his "g"');
is(as_ok('alice', q{SELECT count(*) FROM gnn.graphs WHERE name = 'g'}), '1', 'alice\'s "g" is still loaded');
my $aj2 = as_ok('alice', q{SELECT gnn.train('g', model => 'gcn', name => 'm', hidden => 4, epochs => 2, seed => 1, wait => true)});
is(sq("SELECT version FROM gnn.models WHERE job = $aj2"), '2', 'alice\'s next "m" is her version 2, whatever bob did');
is(sq("SELECT count(*) FROM gnn.training_log WHERE job = $aj2"), '2', 'with its log');

# a superuser's lookups by name find its own objects only
my ($rc, $out, $err) = $node->psql('postgres', q{SELECT * FROM gnn.predict('m')});
like($err, qr/model "m" does not exist/, 'a superuser\'s gnn.predict(\'m\') is not steered to another role\'s "m"');
($rc, $out, $err) = $node->psql('postgres', q{SELECT gnn.degree('g', 1)});
like($err, qr/graph "g" does not exist/, 'nor its gnn.degree(\'g\') to another role\'s graph');
is(sq(q{SELECT count(*) FROM gnn.graphs}), '1', 'a superuser lists every role\'s graphs');
is(sq(q{SET ROLE alice; SELECT count(*) FROM gnn.predict('m')}), '300', 'and uses a role\'s objects with SET ROLE');

# ------------------------------------------------------------------ the running job was never touched
is(sq("SELECT state FROM gnn.jobs WHERE id = $long"), 'running', 'alice\'s job still runs');

# a dropped graph held by a running job stays counted until the job lets go
my $mem = sq('SELECT gnn.memory_used()');
ok($mem > 0, "graph memory in use: $mem bytes");
as_ok('alice', q{SELECT gnn.drop_graph('g')});
is(sq('SELECT gnn.memory_used()'), $mem, 'dropping it while the job runs keeps its memory counted');
($rc, $out, $err) = as('alice', q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split')});
is($rc, 0, 'the name is free again');
ok(sq('SELECT gnn.memory_used()') > $mem, 'and the new graph counts on top');
as_ok('alice', q{SELECT gnn.drop_graph('g')});
is(as_ok('alice', "SELECT gnn.cancel($long)"), 't', 'alice cancels the job');
is(wait_for('SELECT gnn.memory_used()', '0'), '0', 'when the job ends, the memory is free');

# another role's graph: dropped only by a superuser (or a member) with owner =>, also when its role is gone
as_ok('alice', q{SELECT gnn.load_graph('ag', 'e')});
($rc, $out, $err) = as('bob', q{SELECT gnn.drop_graph('ag', owner => 'alice')});
like($err, qr/permission denied to drop another role's graphs/, 'bob cannot drop alice\'s graph with owner =>');
is(sq(q{SELECT gnn.drop_graph('ag', owner => 'alice')}), 't', 'a superuser can');
sq(q{CREATE ROLE carol LOGIN; GRANT SELECT ON e TO carol});
as_ok('carol', q{SELECT gnn.load_graph('cg', 'e')});
sq(q{REVOKE SELECT ON e FROM carol; DROP ROLE carol});
my $orphan = sq(q{SELECT owner::oid FROM gnn.graphs WHERE name = 'cg'});
ok($orphan > 0, "a dropped role's graph is listed with its owner's OID ($orphan)");
is(sq(qq{SELECT gnn.drop_graph('cg', owner => $orphan)}), 't', 'and a superuser frees it with owner => that OID');
is(sq('SELECT gnn.memory_used()'), '0', 'nothing is left');

$node->stop;
done_testing();
