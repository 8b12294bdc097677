# Concurrency: 32 sessions read a model and its graph (gnn.embedding,
# gnn.predict, gnn.similar, gnn.degree, and gnn.sample_neighbors when the
# catalog has it) while a job trains on the graph, another session replaces
# the graph again and again (replace => true) and a third loads and drops
# another graph.  The graph has two versions with known, different answers:
# every answer must match one version entirely (a wrong answer raises
# division_by_zero in the pgbench script, which aborts the client).  After,
# shared memory is back where it was: a replaced graph's segment goes when
# its last user detaches.  bench/concurrency.sh runs the same load longer and
# reports latency percentiles.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use IPC::Run;
use Time::HiRes qw(usleep);

my $secs = $ENV{GNN_CONCURRENCY_SECS} // 12;
my $node = gnn_node('conc', conf => q{
dynamic_shared_memory_type = mmap
max_connections = 60
max_worker_processes = 16
max_parallel_workers_per_gather = 0
gnn.threads = 1
});
sub wait_files
{
	my ($want) = @_;
	my $n;
	for (1 .. 200) { $n = dsm_files(); return $n if $n == $want; usleep(50_000); }
	return $n;
}

# version A: nodes 0..999, 5 out-edges each; version B: nodes 0..1099, 3 out-edges each
sq(q{
	CREATE EXTENSION gnn;
	SELECT setseed(0.75);
	CREATE TABLE nb AS SELECT id, (id % 4)::int AS label,
		CASE WHEN id < 80 THEN 'train' WHEN id < 300 THEN 'val' WHEN id < 700 THEN 'test' END AS split,
		(SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
		   FROM generate_series(0, 15) j)::real[] AS feat
	FROM generate_series(0, 1099) id;
	CREATE TABLE na AS SELECT * FROM nb WHERE id < 1000;
	CREATE TABLE ea AS SELECT s AS src, (s + k * 7) % 1000 AS dst FROM generate_series(0, 999) s, generate_series(1, 5) k;
	CREATE TABLE eb AS SELECT s AS src, (s + k * 11) % 1100 AS dst FROM generate_series(0, 1099) s, generate_series(1, 3) k;
	CREATE TABLE oe AS SELECT s AS src, (s + 1) % 500 AS dst FROM generate_series(0, 499) s;
	CREATE FUNCTION close_to(a real[], b real[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS
		$$ SELECT array_length(a, 1) = array_length(b, 1)
		          AND (SELECT max(abs(x - y)) FROM unnest(a, b) u(x, y)) < 1e-4 $$;
	CREATE TABLE expect (ver text, id bigint, emb real[], deg bigint, sim bigint[], PRIMARY KEY (ver, id));
});
my %load = (
	A => q{SELECT gnn.load_graph('g', 'ea', nodes => 'na', features => 'feat', label => 'label', split => 'split', replace => true)},
	B => q{SELECT gnn.load_graph('g', 'eb', nodes => 'nb', features => 'feat', label => 'label', split => 'split', replace => true)});
sq($load{A});
sq("SELECT gnn.train('g', model => 'gcn', name => 'm', hidden => 16, epochs => 10, seed => 1, wait => true)");
for my $v ('A', 'B')
{
	sq($load{$v});
	sq("INSERT INTO expect SELECT '$v', i, gnn.embedding('m', i), gnn.degree('g', i),
		(SELECT array_agg(s.id ORDER BY s.id) FROM gnn.similar('m', i, 5) s) FROM generate_series(0, 49) i");
}
is(sq(q{SELECT count(*) FROM expect a JOIN expect b ON a.id = b.id AND a.ver = 'A' AND b.ver = 'B'
	WHERE NOT close_to(a.emb, b.emb) AND a.deg <> b.deg}), '50', 'the two versions answer differently for every node checked');
sq($load{A});

# the pgbench scripts: a wrong answer divides by zero
my %scripts = (
	'embedding@6' => q{\set id random(0, 49)
SELECT 1 / (SELECT count(*) FROM expect x WHERE x.id = :id AND close_to(x.emb, gnn.embedding('m', :id)))::int;
},
	'predict@1' => q{SELECT 1 / (CASE WHEN c = 1000 AND mx = 999 THEN 1 WHEN c = 1100 AND mx = 1099 THEN 1 ELSE 0 END)
  FROM (SELECT count(*) c, max(id) mx FROM gnn.predict('m')) s;
},
	'similar@2' => q{\set id random(0, 49)
SELECT 1 / (SELECT count(*) FROM expect x WHERE x.id = :id
  AND x.sim = (SELECT array_agg(s.id ORDER BY s.id) FROM gnn.similar('m', :id, 5) s))::int;
},
	'degree@2' => q{\set id random(0, 49)
SELECT 1 / (SELECT count(*) FROM expect x WHERE x.id = :id AND x.deg = gnn.degree('g', :id))::int;
},
);
# gnn.sample_neighbors, when it exists: arguments by type, answers must be nodes of g
my $sn = sq(q{SELECT string_agg(format_type(t, NULL), ',' ORDER BY o) FROM pg_proc p, unnest(p.proargtypes) WITH ORDINALITY a(t, o)
	WHERE p.proname = 'sample_neighbors' AND p.pronamespace = 'gnn'::regnamespace GROUP BY p.oid LIMIT 1});
if ($sn ne '')
{
	my @args;
	my $i = 0;
	for my $t (split /,/, $sn)
	{
		push @args, $i == 0 ? "'g'" : $t eq 'bigint[]' ? 'ARRAY[:id]::bigint[]' : $t eq 'integer[]' ? 'ARRAY[3, 2]'
		  : $t eq 'boolean' ? 'false'
		  : $t =~ /^(integer|bigint)$/ ? ($i == 1 ? ':id' : '3') : 'DEFAULT';
		$i++;
	}
	my @a = @args; while (@a && $a[-1] eq 'DEFAULT') { pop @a; }
	my $call = 'gnn.sample_neighbors(' . join(', ', @a) . ')';
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $call" =~ s/:id/1/gr);
	if ($rc == 0 && !grep { $_ eq 'DEFAULT' } @a)
	{
		$scripts{'sample@2'} = "\\set id random(0, 49)\nSELECT count(*) FROM $call;\n";
		pass("gnn.sample_neighbors($sn) joins the load");
	}
	else { note("gnn.sample_neighbors($sn) left out: $err"); }
}
else { note('gnn.sample_neighbors is not in the catalog: left out'); }

my $files0 = dsm_files();
my $mem0 = sq('SELECT gnn.memory_used()');

# a training job on g, holding the version it mapped for its whole run
my $job = sq("SELECT gnn.train('g', model => 'gcn', name => 'bg', hidden => 16, epochs => 1000000, seed => 2)");
$node->poll_query_until('postgres', "SELECT state = 'running' FROM gnn.jobs WHERE id = $job");

# the replacer and the dropper
my $connstr = $node->connstr('postgres');
my $n_repl = int($secs * 3);
my ($ro, $re, $do, $de) = ('', '', '', '');
my $repl = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $connstr, '-c', qq{
	DO \$\$ BEGIN FOR i IN 1..$n_repl LOOP
		PERFORM gnn.load_graph('g', CASE WHEN i % 2 = 1 THEN 'eb' ELSE 'ea' END::regclass,
			nodes => CASE WHEN i % 2 = 1 THEN 'nb' ELSE 'na' END::regclass,
			features => 'feat', label => 'label', split => 'split', replace => true);
		PERFORM pg_sleep(0.3);
	END LOOP; END \$\$} ], '>', \$ro, '2>', \$re);
my $drop = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $connstr, '-c', qq{
	DO \$\$ BEGIN FOR i IN 1..$n_repl LOOP
		PERFORM gnn.load_graph('other', 'oe');
		PERFORM pg_sleep(0.1);
		PERFORM gnn.drop_graph('other');
		PERFORM pg_sleep(0.1);
	END LOOP; END \$\$} ], '>', \$do, '2>', \$de);

# 32 sessions
my @cmd = ('pgbench', '-n', '-c', '32', '-j', '2', '-T', $secs, '-P', '5');
my $dir = PostgreSQL::Test::Utils::tempdir();
for my $k (sort keys %scripts)
{
	my ($name, $w) = split /@/, $k;
	open(my $f, '>', "$dir/$name.sql") or die;
	print $f $scripts{$k};
	close($f);
	push @cmd, '-f', "$dir/$name.sql\@$w";
}
push @cmd, $connstr;
my ($bo, $be) = ('', '');
my $t0 = time;
IPC::Run::run(\@cmd, '>', \$bo, '2>', \$be);
my $rc = $? >> 8;
note($bo);
is($rc, 0, "pgbench: 32 sessions for ${secs}s, no client aborted") or diag($be);
unlike($be, qr/aborted|ERROR/, 'pgbench: no wrong answer, no error') or diag(substr($be, 0, 2000));
my ($tx) = $bo =~ /number of transactions actually processed: (\d+)/;
ok(($tx // 0) > 100, "pgbench: $tx calls answered");
my ($failed) = $bo =~ /number of failed transactions: (\d+)/;
is($failed // 0, 0, 'pgbench: no failed transaction');

$repl->finish;
$drop->finish;
is($?, 0, 'the dropper ran to the end') or diag($de);
like(sq('SELECT 1'), qr/1/, 'the server is up');
is(sq("SELECT count(*) FROM gnn.jobs WHERE id = $job AND state = 'running'"), '1', 'the job trained throughout');

# the last replace loaded version A ($n_repl even) or B: memory is that version's
sq($load{A});
# the job still maps the version it started on: its segment lives until the
# job ends, and its memory stays counted (gnn.memory_used) until then
ok(dsm_files() == $files0 + 1, 'a replaced graph stays mapped while the job uses it');
is(sq('SELECT gnn.memory_used()'), 2 * $mem0, 'and its memory counted beside the current version\'s');
sq("SELECT gnn.cancel($job)");
is(wait_files($files0), $files0, 'and goes when its last user lets go: DSM segments back to their number');
is(sq('SELECT gnn.memory_used()'), $mem0, 'graph memory is then what one version of g uses');
is(sq('SELECT gnn.memory_used() = (SELECT sum(bytes) FROM gnn.graphs)'), 't', 'registry accounting is consistent');
is(sq("SELECT string_agg(name, ',') FROM gnn.graphs"), 'g', 'no stray graph');

$node->stop;
done_testing();
