# Permissions and hostile names (001 and 002 cover the basics: seeing,
# reading, dropping, replacing graphs; training on, cancelling finished jobs
# of, and reading models of another role).  Here: nothing is SECURITY
# DEFINER; the samplers, gnn.wait, gnn.cancel of a running job, every model
# function and gnn.embed across roles; column privileges; and names with
# quotes, semicolons and mixed case used as identifiers, never as SQL.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $node = gnn_node('perm', conf => 'max_worker_processes = 16');

sq(q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT CREATE ON SCHEMA public TO alice, bob;
	CREATE TABLE canary (x int);
	INSERT INTO canary VALUES (1);
	GRANT SELECT ON canary TO PUBLIC;
});

# ------------------------------------------------------------------ SECURITY DEFINER
is(sq(q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'gnn'::regnamespace AND prosecdef}), '0',
	'no function of schema gnn is SECURITY DEFINER');
ok(sq(q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'gnn'::regnamespace}) >= 15, 'and there are functions to check');
is(sq(q{SELECT count(*) FROM pg_class WHERE relnamespace = 'gnn'::regnamespace AND relkind = 'v'
	AND NOT coalesce(reloptions::text[] @> '{security_invoker=true}', false) AND relname <> 'graphs'}), '0',
	'the views run as the invoker (gnn.graphs filters by role in its function)');

# ------------------------------------------------------------------ hostile names, alice's objects
my $T = q{"Wei'rd ""Edges"";--"};        # a table name needing quotes
(my $T_sql = $T) =~ s/'/''/g;
sq(qq{
	SET ROLE alice;
	SELECT setseed(0.5);
	CREATE TABLE "MixedNodes" ("Node Id" int PRIMARY KEY, "f;eat" real[], "La""bel" int, "sp'lit" text);
	INSERT INTO "MixedNodes" SELECT i, ARRAY[random(), random(), (i % 2)::float8 + random()]::real[], i % 2,
		CASE WHEN i < 40 THEN 'train' WHEN i < 70 THEN 'val' ELSE 'test' END FROM generate_series(0, 99) i;
	CREATE TABLE $T ("Src Col" int, "dst;x" int);
	INSERT INTO $T SELECT i, (i * 3 + 1) % 100 FROM generate_series(0, 99) i;
});
my $gname = q{Al"ice;DROP TABLE canary;--};
(my $gname_sql = $gname) =~ s/'/''/g;
my $mname = q{M'o"d;el};
(my $mname_sql = $mname) =~ s/'/''/g;
my ($rc, $out, $err) = as('alice', qq{SELECT edges FROM gnn.load_graph('$gname_sql', '$T_sql', src => 'Src Col', dst => 'dst;x',
	nodes => '"MixedNodes"', id => 'Node Id', features => 'f;eat', label => 'La"bel', split => 'sp''lit', undirected => true)});
is($rc, 0, 'a graph with a hostile name loads from a table and columns with hostile names') or diag($err);
is(sq(q{SELECT name FROM gnn.graphs}), $gname, 'the graph name is kept verbatim');
($rc, $out, $err) = as('alice', qq{SELECT gnn.train('$gname_sql', model => 'gcn', name => '$mname_sql', hidden => 8,
	epochs => 5, seed => 1, wait => true)});
is($rc, 0, 'a model with a hostile name trains on it') or diag($err);
is(sq(q{SELECT name FROM gnn.models}), $mname, 'the model name is kept verbatim');
my $into = q{"Out ""T"";x"};
(my $into_sql = $into) =~ s/'/''/g;
is((as('alice', qq{SELECT gnn.embed('$mname_sql', '$into_sql')}))[1], '100', 'embed into a table name needing quotes');
is(sq(q{SELECT count(*) FROM pg_class WHERE relname = 'Out "T";x'}), '1', 'the table is created under exactly that name');
is((as('alice', qq{SELECT gnn.embed('$mname_sql', '"MixedNodes"', NULL, 'E;mb"c', 'Node Id')}))[1], '100',
	'embed into a hostile column of a mixed-case table, joined on a hostile id column');
is(sq(q{SELECT count("E;mb""c") FROM "MixedNodes"}), '100', 'the column has exactly that name');
($rc, $out, $err) = as('alice', qq{SELECT gnn.embed('$mname_sql', 'x; DROP TABLE canary')});
like($err, qr/invalid name syntax|does not exist|syntax/, 'an into that is SQL is refused as a name');
($rc, $out, $err) = as('alice', qq{SELECT gnn.embed('$mname_sql', '"MixedNodes"', NULL, 'e"; DROP TABLE canary; --', 'Node Id')});
is($rc, 0, 'a column name that looks like SQL is just a (strange) column name') or diag($err);
($rc, $out, $err) = as('alice', qq{SELECT gnn.load_graph('x', '$T_sql', src => 'Src Col"; DROP TABLE canary; --', dst => 'dst;x')});
like($err, qr/column .* does not exist/, 'a column name that looks like SQL is looked up as a name');
is(sq('SELECT count(*) FROM canary'), '1', 'the canary table survived every hostile name');

# ------------------------------------------------------------------ bob against alice's objects
my $ajob = sq("SELECT id FROM gnn.jobs LIMIT 1");
my %denied = (
	"SELECT gnn.degree('$gname_sql', 1)" => qr/graph .* does not exist/,
	"SELECT * FROM gnn.neighbors('$gname_sql', 1)" => qr/graph .* does not exist/,
	"SELECT gnn.drop_graph('$gname_sql')" => qr/graph .* does not exist/,
	"SELECT gnn.train('$gname_sql', model => 'gcn', epochs => 1)" => qr/graph .* does not exist/,
	"SELECT gnn.embedding('$mname_sql', 1)" => qr/does not exist/,
	"SELECT * FROM gnn.predict('$mname_sql')" => qr/does not exist/,
	"SELECT * FROM gnn.similar('$mname_sql', 1)" => qr/does not exist/,
	"SELECT * FROM gnn._embedding_rows('$mname_sql')" => qr/does not exist/,
	"SELECT gnn.embed('$mname_sql', 'stolen')" => qr/does not exist/,
	"SELECT gnn.drop_model('$mname_sql')" => qr/does not exist/,
	"SELECT * FROM gnn.wait($ajob)" => qr/job $ajob does not exist/,
	"SELECT gnn.cancel($ajob)" => qr/job $ajob does not exist/,
);
# the samplers, when this build has them
for my $f ('sample_neighbors', 'random_walk', 'partition')
{
	my $args = sq(qq{SELECT pg_get_function_identity_arguments(p.oid) FROM pg_proc p
		WHERE proname = '$f' AND pronamespace = 'gnn'::regnamespace LIMIT 1});
	if ($args eq '') { note("gnn.$f is not in this build"); next; }
	my @types = map { (split / /, $_)[-1] } split /, /, $args;
	my @a = ("'$gname_sql'");
	for my $t (@types[ 1 .. $#types ])
	{
		push @a, $t eq 'bigint[]' ? 'ARRAY[1]::bigint[]' : $t eq 'integer[]' ? 'ARRAY[2]' : $t =~ /^(integer|bigint)$/ ? '2' : 'DEFAULT';
	}
	pop @a while @a && $a[-1] eq 'DEFAULT';
	$denied{"SELECT * FROM gnn.$f(" . join(', ', @a) . ')'} = qr/graph .* does not exist/
	  unless grep { $_ eq 'DEFAULT' } @a;
}
for my $sql (sort keys %denied)
{
	($rc, $out, $err) = as('bob', $sql);
	like($err, $denied{$sql}, "bob: $sql") or diag($err);
}
is((as('bob', 'SELECT count(*) FROM gnn.models'))[1], '0', 'bob sees no model rows');
is((as('bob', 'SELECT count(*) FROM gnn.job_history'))[1], '0', 'bob sees no job rows');
is((as('bob', 'SELECT count(*) FROM gnn.training_log'))[1], '0', 'bob sees no training log rows');
($rc, $out, $err) = as('bob', "UPDATE gnn.models SET weights = '\\x00' RETURNING 1");
is($out, '', 'bob cannot overwrite alice\'s model weights');
($rc, $out, $err) = as('bob', "INSERT INTO gnn.models (name, version, graph, model, task, params, metrics, owner, weights)
	VALUES ('forged', 1, 'g', 'gcn', 'node_classification', '{}', '{}', 'alice', '\\x00')");
like($err, qr/permission denied for table models/, 'bob cannot plant a model in alice\'s name');
is(sq("SELECT owner FROM gnn.models"), 'alice', 'alice\'s model is untouched');

# a running job of alice: bob can neither see nor cancel it
my $run = (as('alice', "SELECT gnn.train('$gname_sql', model => 'gcn', name => 'long', hidden => 8, epochs => 1000000)"))[1];
$node->poll_query_until('postgres', "SELECT state = 'running' FROM gnn.jobs WHERE id = $run");
($rc, $out, $err) = as('bob', "SELECT gnn.cancel($run)");
like($err, qr/job $run does not exist/, 'bob cannot cancel alice\'s running job');
is((as('bob', "SELECT count(*) FROM gnn.jobs WHERE id = $run"))[1], '0', 'nor see it');
($rc, $out, $err) = as('bob', "SELECT pg_terminate_backend(pid) FROM gnn.jobs WHERE id = $run");
is($out, '', 'nor find its worker through gnn.jobs');
is(sq("SELECT state FROM gnn.jobs WHERE id = $run"), 'running', 'the job still runs');
is((as('alice', "SELECT gnn.cancel($run)"))[1], 't', 'alice cancels it');

# ------------------------------------------------------------------ privileges on tables
sq(q{
	CREATE TABLE colpriv (src int, dst int);
	INSERT INTO colpriv VALUES (1, 2);
	GRANT SELECT (src) ON colpriv TO bob;
	CREATE TABLE bobs_out (id bigint PRIMARY KEY, embedding real[]);
	ALTER TABLE bobs_out OWNER TO bob;
});
($rc, $out, $err) = as('bob', "SELECT gnn.load_graph('cp', 'colpriv')");
like($err, qr/permission denied for table colpriv/, 'a column the role may not SELECT cannot be loaded');
sq('GRANT SELECT (dst) ON colpriv TO bob');
is((as('bob', "SELECT edges FROM gnn.load_graph('cp', 'colpriv')"))[1], '1', 'with both columns granted it can');
($rc, $out, $err) = as('alice', "SELECT gnn.embed('$mname_sql', 'bobs_out')");
like($err, qr/permission denied for table bobs_out/, 'embed cannot write into a table the role may not write');
($rc, $out, $err) = as('alice', "SELECT gnn.embed('$mname_sql', 'pg_catalog.evil')");
like($err, qr/permission denied for schema pg_catalog/, 'nor create one where it may not');
($rc, $out, $err) = as('bob', "SELECT gnn.load_graph('gm', 'gnn.models', src => 'version', dst => 'version')");
like($err, qr/edge table gnn.models is empty/, 'loading gnn.models as bob reads none of alice\'s rows (row-level security)');

$node->stop;
done_testing();
