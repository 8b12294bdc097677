# Server-level behaviour of loaded graphs: shared across sessions, outliving
# the loading backend, lost on restart, refused without preloading, and
# private to their owner.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $node = gnn_node('graph');

$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	CREATE TABLE e (src int, dst int);
	INSERT INTO e SELECT g, (g * 17) % 1000 FROM generate_series(0, 999) g;
});

# one session loads and exits; others see the graph
$node->safe_psql('postgres', "SELECT gnn.load_graph('g', 'e', undirected => true)");
is($node->safe_psql('postgres', "SELECT nodes || '/' || edges FROM gnn.graphs WHERE name = 'g'"),
	$node->safe_psql('postgres', "SELECT '1000/' || count(*) FROM (SELECT src, dst FROM e UNION SELECT dst, src FROM e) a"), 'graph visible from another session after the loading backend exited');
is($node->safe_psql('postgres', "SELECT gnn.degree('g', 17)"),
	$node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT dst FROM e WHERE src = 17 UNION SELECT src FROM e WHERE dst = 17) s"),
	'degree read from shared memory in a new session matches SQL');

# graphs are per database
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION gnn');
is($node->safe_psql('other', 'SELECT count(*) FROM gnn.graphs'), '0', 'another database does not see the graph');

# memory accounting returns to zero after drop
my $used = $node->safe_psql('postgres', 'SELECT gnn.memory_used()');
ok($used > 0, "graph memory in use ($used bytes)");
$node->safe_psql('postgres', "SELECT gnn.load_graph('h', 'e')");
$node->safe_psql('postgres', "SELECT gnn.drop_graph('h')");
is($node->safe_psql('postgres', 'SELECT gnn.memory_used()'), $used, 'drop returns the memory');

# many load/drop cycles in one session leave shared memory where it started
$node->safe_psql('postgres', q{
	DO $$ BEGIN FOR i IN 1..50 LOOP
		PERFORM gnn.load_graph('cycle', 'e', replace => true);
	END LOOP; PERFORM gnn.drop_graph('cycle'); END $$;
});
is($node->safe_psql('postgres', 'SELECT gnn.memory_used()'), $used, '50 replace cycles leave memory unchanged');

# ------------------------------------------------------------------ roles
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE TABLE alice_edges (src int, dst int);
	INSERT INTO alice_edges VALUES (1, 2), (2, 3);
	ALTER TABLE alice_edges OWNER TO alice;
	CREATE TABLE shared_edges (src int, dst int, owner text);
	INSERT INTO shared_edges VALUES (1, 2, 'alice'), (2, 3, 'bob'), (3, 4, 'bob');
	GRANT SELECT ON shared_edges TO alice, bob;
	ALTER TABLE shared_edges ENABLE ROW LEVEL SECURITY;
	CREATE POLICY mine ON shared_edges USING (owner = current_user);
});
$node->safe_psql('postgres', "SET ROLE alice; SELECT gnn.load_graph('ag', 'alice_edges')");
is($node->safe_psql('postgres', "SET ROLE bob; SELECT count(*) FROM gnn.graphs WHERE name = 'ag'"),
	'0', 'bob does not see alice\'s graph');
# graph names are per role: alice's "ag" is invisible to bob, who may have his own
my ($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.degree('ag', 1)");
like($err, qr/graph "ag" does not exist/, 'bob cannot read alice\'s graph');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.drop_graph('ag')");
like($err, qr/graph "ag" does not exist/, 'bob cannot drop alice\'s graph');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; SELECT gnn.load_graph('ag', 'alice_edges', replace => true)");
like($err, qr/permission denied for table alice_edges/, 'bob cannot load a table he cannot SELECT');
is($node->safe_psql('postgres', "SET ROLE bob; SELECT edges FROM gnn.load_graph('ag', 'shared_edges', replace => true)"),
	'2', 'bob\'s "ag" is his own graph, beside alice\'s');
is($node->safe_psql('postgres', "SET ROLE alice; SELECT gnn.degree('ag', 1)"), '1',
	'alice\'s "ag" is untouched (node 1 is only in hers)');
$node->safe_psql('postgres', "SET ROLE bob; SELECT gnn.drop_graph('ag')");
is($node->safe_psql('postgres', "SELECT count(*) FROM gnn.graphs WHERE name = 'ag'"), '1',
	'a superuser sees every graph');
is($node->safe_psql('postgres', "SET ROLE bob; SELECT edges FROM gnn.load_graph('bg', 'shared_edges')"),
	'2', 'row-level security applies to what a role loads');
is($node->safe_psql('postgres', "SET ROLE alice; SELECT edges FROM gnn.load_graph('alg', 'shared_edges')"),
	'1', 'another role loads only its own rows');

# ------------------------------------------------------------------ restart
# loaded graphs are in the graph store (gnn.persist_graphs is on): they come back
# unmapped, mapped on first use (test/t/012_store.pl has the rest)
my $listed = q{SELECT string_agg(name || ':' || owner || ':' || edges, ',' ORDER BY name, owner::text) FROM gnn.graphs};
my $before = $node->safe_psql('postgres', $listed);
$node->restart;
is($node->safe_psql('postgres', $listed), $before, 'a restart keeps the loaded graphs, owners and all');
is($node->safe_psql('postgres', 'SELECT gnn.memory_used()'), '0', 'none is in memory before its first use');
is($node->safe_psql('postgres', "SET ROLE alice; SELECT gnn.degree('ag', 1)"), '1',
	'alice\'s graph is back, hers');
is($node->safe_psql('postgres', "SELECT edges FROM gnn.load_graph('g', 'e', replace => true)"), '1000',
	'loading works after a restart');

# ------------------------------------------------------------------ without preload
$node->stop;
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->start;
($rc, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM gnn.graphs');
like($err, qr/gnn must be loaded via shared_preload_libraries/, 'without preload, calls fail with a clear error');
like($err, qr/HINT:  Add 'gnn' to shared_preload_libraries/, 'and a hint');
$node->safe_psql('postgres', 'DROP EXTENSION gnn');
($rc, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION gnn');
like($err, qr/gnn must be loaded via shared_preload_libraries/, 'CREATE EXTENSION fails without preload');
$node->stop;
done_testing();
