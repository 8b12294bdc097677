# A model-based random test of PostgreSQL's promises (issue #39): random
# sequences of calls by two roles, alice and bob, each on her or his own
# tables (loads, replaces, drops, tracking and untracking, DML and DDL on
# tracked tables, refreshes, training, cancels, hostile calls on the other's
# names and planted capture triggers, BEGIN / SAVEPOINT / ROLLBACK TO /
# COMMIT / ROLLBACK, terminated sessions, server restarts), against a model
# of what each role's committed graphs must be.  After every step:
#  - the registry holds exactly the model's committed graphs (names, owners,
#    tracked, persisted), and its memory accounting adds up;
#  - a graph not tracked keeps its digest (across restarts when persisted);
#    a tracked one equals a fresh load of its tables after a refresh (the
#    refresh steps assert it);
#  - the graph store has a directory per persisted graph and nothing else,
#    and no pending file outlives its transaction;
#  - capture triggers, gnn.capture and the change log agree with the tracked
#    graphs: 4 triggers per tracked table, every binding's trigger there, no
#    log row of a graph that is not tracked;
#  - no call failed with XX000, the server log has no crash or internal error;
#  - no job is left running, and every job stopped within 2 s.
# GNN_MODEL_SEED replays a run (the seed is printed); GNN_MODEL_STEPS sets
# its length (2,000 here, 50,000 in make fuzz).
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use Time::HiRes qw(time usleep);
use DBI;

my $seed = $ENV{GNN_MODEL_SEED} // int(rand(2**31));
my $steps = $ENV{GNN_MODEL_STEPS} // 2000;
srand($seed);
diag("model test: seed $seed, $steps steps (GNN_MODEL_SEED=$seed replays it)");

# freed memory read again shows as garbage
$ENV{MALLOC_PERTURB_} = '165';
my $node = gnn_node('model', conf => q{
max_worker_processes = 24
gnn.max_jobs = 4
gnn.threads = 2
restart_after_crash = on
log_min_messages = warning
max_prepared_transactions = 2
});
my @roles = ('alice', 'bob');
$node->safe_psql('postgres', q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT CREATE ON SCHEMA public TO alice, bob;
});
my $dboid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my %roleoid = map { $_ => $node->safe_psql('postgres', "SELECT oid FROM pg_roles WHERE rolname = '$_'") } @roles;

sub dsn { return "dbi:Pg:dbname=postgres;host=" . $node->host . ";port=" . $node->port; }

my %dbh;      # per role
my $admin;

sub connect_as
{
	my ($user) = @_;
	my $h = DBI->connect(dsn(), $user, '', { AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 })
	  or die "cannot connect as $user: $DBI::errstr";
	$h->do("SET client_min_messages = warning");
	$h->do("SET gnn.progress = off");
	return $h;
}

sub connect_all
{
	$admin = connect_as('postgres');
	$dbh{$_} = connect_as($_) for @roles;
}

# ---------------------------------------------------------------- the model
# committed graphs per role: name => { table, nodes, tracked, persisted, digest (not tracked) }
my %graphs = (alice => {}, bob => {});
# an open transaction per role: a stack of graph maps (bottom: the
# transaction's start, top: now); savepoint names parallel to it
my %txn = (alice => undef, bob => undef);
my %sp = (alice => [], bob => []);
# (A "dormant" entry would be a tracked graph a restart took with its
# triggers left: none should ever appear, since tracked graphs are stored.)
my $failures = 0;
my $step = 0;
my $log_pos = 0;
my %count;

sub clone { my ($m) = @_; return { map { $_ => { %{ $m->{$_} } } } keys %$m }; }
sub live { my ($m) = @_; return grep { !$m->{$_}{dormant} } keys %$m; }
sub is_live { my ($m, $g) = @_; return exists $m->{$g} && !$m->{$g}{dormant}; }
sub view { my ($r) = @_; return $txn{$r} ? $txn{$r}[-1] : $graphs{$r}; }
sub in_txn { my ($r) = @_; return defined $txn{$r}; }

my @history;    # the last statements run, for a failure's report

sub bad
{
	my ($what) = @_;
	$failures++;
	Test::More::fail("step $step (seed $seed): $what");
	diag("the last statements:\n" . join("\n", @history)) if $failures == 1;
	BAIL_OUT("model test failed at step $step; replay with GNN_MODEL_SEED=$seed") if $failures > 5;
}

# run a statement as a role: (ok, rows, sqlstate, message); XX000 is always a failure
sub run
{
	my ($r, $sql) = @_;
	my $h = $r eq 'admin' ? $admin : $dbh{$r};
	my $rows = $h->selectall_arrayref($sql);
	if ($r ne 'admin')
	{
		push @history, "$step $r: $sql" . (defined $rows ? '' : ' -- ' . ($h->state // '') . ' ' . ($h->errstr // ''));
		shift @history if @history > 40;
	}
	my $state = $h->state // '';
	my $err = $h->errstr // '';
	if (!defined $rows && $state eq '')
	{
		$state = '08006';    # the connection went away
	}
	bad("$r: $sql: internal error (XX000): $err") if $state eq 'XX000';
	return (defined $rows ? 1 : 0, $rows // [], $state, $err);
}

sub one { my ($r, $sql) = @_; my ($ok, $rows, $st, $err) = run($r, $sql); return $ok ? $rows->[0][0] : undef; }

sub expect
{
	my ($r, $sql, $want_ok, $want_state, $what) = @_;
	my ($ok, $rows, $st, $err) = run($r, $sql);
	if ($want_ok && !$ok)
	{
		bad("$what: $r: $sql: unexpected error $st: $err");
	}
	elsif (!$want_ok && $ok)
	{
		bad("$what: $r: $sql: succeeded, expected error $want_state");
	}
	elsif (!$want_ok && $want_state && $st ne $want_state)
	{
		bad("$what: $r: $sql: error $st ($err), expected $want_state");
	}
	# an error aborts an open transaction: the model's transaction is then dead
	if (!$ok && in_txn($r))
	{
		$txn{$r}[-1]{__aborted} = 1;
	}
	return ($ok, $rows);
}

# ---------------------------------------------------------------- tables
# each role: edge tables e0, e1 (s, d, w) and a node table n (id, f, label, split)
for my $r (@roles)
{
	$node->safe_psql('postgres', qq{
		SET ROLE $r;
		CREATE TABLE ${r}_n (id int PRIMARY KEY, f real[], label int, split text);
		INSERT INTO ${r}_n SELECT i, ARRAY[(i % 3)::real, (i % 5)::real, 1], i % 3,
		       CASE WHEN i % 4 = 0 THEN 'val' ELSE 'train' END FROM generate_series(0, 29) i;
		CREATE TABLE ${r}_e0 (s int, d int, w float8);
		INSERT INTO ${r}_e0 SELECT i, (i * 7 + 3) % 30, 1 + i % 3 FROM generate_series(0, 29) i;
		CREATE TABLE ${r}_e1 (s int, d int, w float8);
		INSERT INTO ${r}_e1 SELECT i, (i * 11 + 1) % 30, 1 FROM generate_series(0, 29) i;
		CREATE TABLE ${r}_junk (x int);
	});
}
connect_all();

sub rnd { my ($n) = @_; return int(rand($n)); }
sub pick { return $_[ rnd(scalar @_) ]; }

sub load_sql
{
	my ($r, $g, %o) = @_;
	return "SELECT nodes FROM gnn.load_graph('$g', '$o{table}', 's', 'd', weight => 'w'"
	  . ($o{nodes} ? ", nodes => '${r}_n', features => 'f', label => 'label', split => 'split', skip_dangling => true" : '')
	  . ", track => " . ($o{tracked} ? 'true' : 'false') . ", persist => " . ($o{persisted} ? 'true' : 'false')
	  . ($o{replace} ? ', replace => true' : '') . ")";
}

# the digest of a graph as its owner sees it (in its session: staged versions included)
sub digest { my ($r, $g) = @_; return one($r, "SELECT gnn.graph_digest('$g')"); }

# ---------------------------------------------------------------- actions
sub act_load
{
	my ($r) = @_;
	my $g = pick('g0', 'g1', 'g2');
	my %o = (table => "${r}_" . pick('e0', 'e1'), nodes => rnd(2), tracked => rnd(3) == 0, persisted => rnd(3) > 0,
			 replace => rnd(3) > 0);
	my $v = view($r);
	my $exists = is_live($v, $g);
	# a name whose triggers are there (tracked, or dormant) stays tracked whatever track => says
	my $dormant = exists $v->{$g} && ($v->{$g}{dormant} || $v->{$g}{tracked});
	my ($ok) = expect($r, load_sql($r, $g, %o), !$exists || $o{replace}, '42710', 'load');
	return unless $ok;
	$o{tracked} = 1 if $dormant;    # its triggers are there: the load follows the tables (again)
	$o{persisted} = 1 if $o{tracked};    # a tracked graph is always stored
	$v->{$g} = { %o };
	$v->{$g}{digest} = digest($r, $g) unless $o{tracked};
	$count{load}++;
}

sub act_drop
{
	my ($r) = @_;
	my $v = view($r);
	my $g = rnd(4) ? pick('g0', 'g1', 'g2') : pick(live($v), 'g0');
	my $if = rnd(2);
	my ($ok) = expect($r, "SELECT gnn.drop_graph('$g'" . ($if ? ', if_exists => true' : '') . ")",
		is_live($v, $g) || $if, '42704', 'drop');
	delete $v->{$g} if $ok;    # (a dormant name's triggers go with a drop that is told if_exists)
	$count{drop}++;
}

sub act_track
{
	my ($r) = @_;
	my $v = view($r);
	my @names = live($v);
	return act_load($r) unless @names;
	my $g = pick(@names);
	my $on = rnd(3) > 0;
	my ($ok) = expect($r, "SELECT gnn.track('$g', " . ($on ? 'true' : 'false') . ")", 1, '', 'track');
	return unless $ok;
	if ($on)
	{
		$v->{$g}{tracked} = 1;
		$v->{$g}{persisted} = 1;
		delete $v->{$g}{digest};
	}
	else
	{
		$v->{$g}{tracked} = 0;
		$v->{$g}{digest} = digest($r, $g);
	}
	$count{track}++;
}

sub act_dml
{
	my ($r) = @_;
	my $t = "${r}_" . pick('e0', 'e1');
	my $k = rnd(30);
	my $sql = pick(
		"INSERT INTO $t VALUES ($k, " . rnd(30) . ", " . (1 + rnd(3)) . ")",
		"DELETE FROM $t WHERE s = $k",
		"UPDATE $t SET w = w + 1 WHERE d = $k",
		"UPDATE $t SET d = " . rnd(30) . " WHERE s = $k",
		"INSERT INTO $t SELECT $k, i, 1 FROM generate_series(0, " . rnd(5) . ") i");
	expect($r, $sql, 1, '', 'dml');
	$count{dml}++;
}

# DDL that keeps the tables loadable by the same call (columns s, d, w)
sub act_ddl
{
	my ($r) = @_;
	my $t = "${r}_" . pick('e0', 'e1');
	my $kind = rnd(6);
	my @sql;
	if ($kind == 0)
	{
		my $type = one($r, "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = '$t'::regclass AND attname = 'w'");
		@sql = ($type eq 'numeric' ? "ALTER TABLE $t ALTER COLUMN w TYPE float8 USING w / 2"
				: "ALTER TABLE $t ALTER COLUMN w TYPE numeric USING w * 2");
	}
	elsif ($kind == 1)
	{
		@sql = ("ALTER TABLE $t RENAME s TO tmp", "ALTER TABLE $t RENAME d TO s", "ALTER TABLE $t RENAME tmp TO d");
	}
	elsif ($kind == 2)
	{
		@sql = ("ALTER TABLE $t ADD COLUMN junk int DEFAULT 1", "ALTER TABLE $t DROP COLUMN junk");
	}
	elsif ($kind == 3)
	{
		@sql = ("CREATE INDEX ON $t (s)");
	}
	elsif ($kind == 4)
	{
		@sql = ("ALTER TABLE $t DISABLE TRIGGER ALL");
	}
	else
	{
		@sql = ("UPDATE $t SET w = w");    # a statement that changes no value, captured
	}
	for my $s (@sql)
	{
		my ($ok) = expect($r, $s, 1, '', 'ddl');
		return unless $ok;
	}
	$count{ddl}++;
}

# a tracked graph after a refresh equals a fresh load of its tables (checked in a rolled-back savepoint)
sub act_refresh
{
	my ($r) = @_;
	my $v = view($r);
	my @tracked = grep { $v->{$_}{tracked} } live($v);
	return act_dml($r) unless @tracked;
	my $g = pick(@tracked);
	my ($ok) = expect($r, "SELECT inserted_edges FROM gnn.refresh_graph('$g', merge => " . (rnd(4) ? 'false' : 'true') . ")",
		1, '', 'refresh');
	return unless $ok;
	my $own = !in_txn($r);
	run($r, 'BEGIN') if $own;
	run($r, 'SAVEPOINT fresh');
	my ($lok) = expect($r, load_sql($r, '__fresh', %{ $v->{$g} }, tracked => 0, persisted => 0, replace => 1), 1, '', 'fresh load');
	if ($lok)
	{
		my $same = one($r, "SELECT gnn.graph_digest('$g') = gnn.graph_digest('__fresh')");
		bad("refresh: graph $g of $r differs from a fresh load of its tables") unless defined $same && $same;
	}
	run($r, 'ROLLBACK TO fresh');
	run($r, 'ROLLBACK') if $own;
	$count{refresh}++;
}

sub act_begin
{
	my ($r) = @_;
	if (!in_txn($r))
	{
		expect($r, 'BEGIN', 1, '', 'begin');
		$txn{$r} = [ clone($graphs{$r}) ];
		$sp{$r} = [];
		%{ $txn{$r}[0] } = %{ clone($graphs{$r}) };
		$count{begin}++;
		return;
	}
	my $top = $txn{$r}[-1];
	if ($top->{__aborted})
	{
		# an aborted transaction only takes ROLLBACK (TO a savepoint)
		return act_end($r);
	}
	my $name = 's' . scalar(@{ $sp{$r} });
	expect($r, "SAVEPOINT $name", 1, '', 'savepoint');
	push @{ $txn{$r} }, clone($top);
	push @{ $sp{$r} }, $name;
	$count{savepoint}++;
}

sub act_end
{
	my ($r) = @_;
	return act_begin($r) unless in_txn($r);
	my $aborted = $txn{$r}[-1]{__aborted};
	if (@{ $sp{$r} } && rnd(2))
	{
		# ROLLBACK TO or RELEASE the innermost savepoint
		my $name = pop @{ $sp{$r} };
		my $inner = pop @{ $txn{$r} };
		if (rnd(2) || $aborted)
		{
			expect($r, "ROLLBACK TO $name", 1, '', 'rollback to');
			expect($r, "RELEASE $name", 1, '', 'release after rollback to');
			$count{rollback_to}++;
		}
		else
		{
			expect($r, "RELEASE $name", 1, '', 'release');
			$txn{$r}[-1] = $inner;
			$count{release}++;
		}
		return;
	}
	my $commit = !$aborted && rnd(3) > 0;
	my ($ok) = expect($r, $commit ? 'COMMIT' : 'ROLLBACK', 1, '', 'end');
	if ($commit && $ok)
	{
		$graphs{$r} = $txn{$r}[-1];
		delete $graphs{$r}{$_}{__aborted} for keys %{ $graphs{$r} };
		$count{commit}++;
	}
	else
	{
		$count{rollback}++;
	}
	delete $graphs{$r}{__aborted};
	$txn{$r} = undef;
	$sp{$r} = [];
}

# the other role's names, as this role sees them: nothing
sub act_hostile
{
	my ($r) = @_;
	my $o = $r eq 'alice' ? 'bob' : 'alice';
	my $v = view($r);
	my @theirs = grep { !is_live($v, $_) } live($graphs{$o});
	if (@theirs)
	{
		my $g = pick(@theirs);
		my $sql = pick("SELECT gnn.degree('$g', 1)", "SELECT gnn.drop_graph('$g')", "SELECT * FROM gnn.refresh_graph('$g')",
			"SELECT gnn.track('$g')", "SELECT gnn.graph_digest('$g')",
			"SELECT gnn.drop_graph('$g', owner => '$o')");
		my $want = $sql =~ /owner =>/ ? '42501' : '42704';
		expect($r, $sql, 0, $want, 'hostile');
	}
	else
	{
		# a trigger of its own on gnn._capture(), naming the other's graph: it logs nothing
		my $g = pick('g0', 'g1', 'g2');
		expect($r, "DROP TRIGGER IF EXISTS planted ON ${r}_junk", 1, '', 'plant');
		expect($r, "CREATE TRIGGER planted AFTER INSERT ON ${r}_junk REFERENCING NEW TABLE AS gnn_new "
			  . "FOR EACH STATEMENT EXECUTE FUNCTION gnn._capture('$g', '$roleoid{$o}', 'e', 'x', 'x', '', '')", 1, '', 'plant');
		expect($r, "INSERT INTO ${r}_junk VALUES (1)", 1, '', 'plant');
	}
	$count{hostile}++;
}

# a short job on a graph with features, or a long one stopped
sub act_train
{
	my ($r) = @_;
	return if in_txn($r);
	my $v = view($r);
	my @feat = grep { $v->{$_}{nodes} } live($v);
	return act_load($r) unless @feat;
	my $g = pick(@feat);
	if (rnd(2))
	{
		expect($r, "SELECT gnn.train('$g', model => 'gcn', hidden => 8, epochs => 2, device => 'cpu', wait => true)",
			1, '', 'train');
		$count{train}++;
		return;
	}
	my $id = one($r, "SELECT gnn.train('$g', model => 'gcn', hidden => 8, epochs => 100000, device => 'cpu')");
	return bad("train: no job id") unless defined $id;
	for (1 .. 200)
	{
		last if (one('admin', "SELECT state FROM gnn.jobs WHERE id = $id") // '') eq 'running';
		usleep(10_000);
	}
	my $how = pick('cancel', 'terminate');
	my $t0 = time;
	if ($how eq 'cancel') { expect($r, "SELECT gnn.cancel($id)", 1, '', 'cancel'); }
	else { run('admin', "SELECT pg_terminate_backend(pid) FROM gnn.jobs WHERE id = $id AND pid IS NOT NULL"); }
	my $state = '';
	while (time - $t0 < 10)
	{
		$state = one('admin', "SELECT state FROM gnn.jobs WHERE id = $id") // '';
		last if $state =~ /^(cancelled|failed|succeeded)$/;
		usleep(20_000);
	}
	my $dt = time - $t0;
	bad(sprintf("job $id: not stopped by $how within 2 s (%s after %.2f s)", $state, $dt)) if $dt > 2;
	$count{"stop_$how"}++;
}

sub act_terminate_session
{
	my ($r) = @_;
	my $pid = $dbh{$r}->{pg_pid};
	run('admin', "SELECT pg_terminate_backend($pid)");
	for (1 .. 100) { last unless one('admin', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid"); usleep(10_000); }
	$dbh{$r}->disconnect;
	$dbh{$r} = connect_as($r);
	$txn{$r} = undef;
	$sp{$r} = [];
	$count{terminate_session}++;
}

sub act_restart
{
	my $mode = pick('fast', 'immediate');
	$_->disconnect for values %dbh;
	$admin->disconnect;
	$node->restart(mode => $mode);
	connect_all();
	for my $r (@roles)
	{
		$txn{$r} = undef;
		$sp{$r} = [];
		# graphs kept in memory only are gone (never a tracked one: those are always stored);
		# stored ones come back as committed
		delete $graphs{$r}{$_} for grep { !$graphs{$r}{$_}{persisted} } keys %{ $graphs{$r} };
	}
	$log_pos = -s $node->logfile;    # what the shutdown and recovery logged
	$count{"restart_$mode"}++;
}

# ---------------------------------------------------------------- invariants

sub invariants
{
	my $open = grep { in_txn($_) } @roles;
	# the registry: each role's committed graphs, tracked and persisted as the model says
	my $rows = $admin->selectall_arrayref(
		"SELECT owner::text, name, tracked, persisted FROM gnn.graphs WHERE name NOT LIKE '\\_\\_%' ORDER BY 1, 2");
	my $got = join(';', map { "$_->[0]/$_->[1]/" . ($_->[2] ? 't' : 'f') . "/" . ($_->[3] ? 't' : 'f') } @$rows);
	# capture works for a tracked graph while each of its triggers is there and fires ALWAYS (the committed catalog)
	my %off = map { ("$_->[0]/$_->[1]" => $_->[2]) } @{ $admin->selectall_arrayref(
		q{SELECT c.owner::text, c.graph, bool_or(t.oid IS NULL OR t.tgenabled <> 'A')
		  FROM gnn.capture c LEFT JOIN pg_trigger t ON t.oid = c.trigger GROUP BY 1, 2}) };
	my $want = join(';', map {
		my $r = $_;
		map {
			my $e = $graphs{$r}{$_};
			my $tracked = $e->{tracked} && exists $off{"$r/$_"} && !$off{"$r/$_"};
			"$r/$_/" . ($tracked ? 't' : 'f') . "/" . ($e->{persisted} ? 't' : 'f')
		} sort(live($graphs{$r}))
	} sort @roles);
	bad("registry: got [$got], model [$want]") if $got ne $want;
	# graphs not tracked keep their digests
	for my $r (@roles)
	{
		for my $g (sort(live($graphs{$r})))
		{
			my $e = $graphs{$r}{$g};
			next if $e->{tracked} || !defined $e->{digest};
			my $d = one('admin', "SET ROLE $r; SELECT gnn.graph_digest('$g')");
			$d = one('admin', "SELECT gnn.graph_digest('$g')") unless defined $d;
			run('admin', 'RESET ROLE');
			bad("digest: $r/$g changed (" . ($d // 'error') . " against $e->{digest})") if ($d // '') ne $e->{digest};
		}
	}
	run('admin', 'RESET ROLE');
	return if $open;
	# memory accounting
	# (a job reported done holds its graph, dropped or not, until its results pass ends: up to 2 s;
	# DBD::Pg gives a boolean as 1 or 0)
	my $acc;
	for (1 .. 100)
	{
		$acc = one('admin', "SELECT gnn.memory_used() = coalesce((SELECT sum(bytes) FROM gnn.graphs WHERE state = 'memory'), 0)");
		last if $acc;
		usleep(20_000);
	}
	bad("gnn.memory_used() is not the graphs' bytes") unless $acc;
	# the store: a directory per persisted graph, nothing pending
	my %dirs;
	for my $d (glob($node->data_dir . "/gnn/$dboid/*"))
	{
		my ($owner, $hex) = $d =~ m{/(\d+)_([0-9a-f]+)$} or next;
		$dirs{ "$owner/" . pack('H*', $hex) } = 1;
		bad("store: a pending file outlived its transaction in $d") if glob("$d/pending-*");
	}
	my %want_dirs = map { my $r = $_; map { ("$roleoid{$r}/$_" => 1) } grep { $graphs{$r}{$_}{persisted} } live($graphs{$r}) } @roles;
	my $gd = join(',', sort keys %dirs);
	my $wd = join(',', sort keys %want_dirs);
	bad("store: directories [$gd], model [$wd]") if $gd ne $wd;
	# capture: 4 triggers per table some tracked graph reads, each bound, and the log only for tracked graphs
	my $trig = one('admin', "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'gnn\\_capture\\_%'");
	my $bound = one('admin', "SELECT count(*) FROM gnn.capture c JOIN pg_trigger t ON t.oid = c.trigger");
	my $bindings = one('admin', "SELECT count(*) FROM gnn.capture");
	my $per_graph = 0;
	# four per table a tracked graph reads: its edge table, and its node table when it has one
	for my $r (@roles) { $per_graph += 4 * (1 + ($graphs{$r}{$_}{nodes} ? 1 : 0)) for grep { $graphs{$r}{$_}{tracked} } keys %{ $graphs{$r} }; }
	if ($trig != $per_graph || $bound != $per_graph || $bindings != $per_graph)
	{
		my $b = $admin->selectall_arrayref("SELECT owner::text || '/' || graph || ':' || count(*) FROM gnn.capture GROUP BY owner, graph ORDER BY 1");
		my $m = join(',', map { my $r = $_; map { "$r/$_" . ($graphs{$r}{$_}{dormant} ? '(dormant)' : '') }
				grep { $graphs{$r}{$_}{tracked} } sort keys %{ $graphs{$r} } } @roles);
		bad("capture: $trig triggers, $bound bound, $bindings bindings; $per_graph expected (bindings "
			  . join(',', map { $_->[0] } @$b) . "; tracked in the model: $m)");
	}
	my $orphans = one('admin', q{SELECT count(*) FROM gnn.change_log l WHERE NOT EXISTS
		(SELECT 1 FROM gnn.graphs g WHERE g.name = l.graph AND g.owner = l.owner)});
	if ($orphans)
	{
		my $o = $admin->selectall_arrayref(q{SELECT owner::text || '/' || graph || ' ' || relid::regclass::text || ' ' || kind::text || ' ' || rows || ' ' || logged_at::text
			FROM gnn.change_log l WHERE NOT EXISTS (SELECT 1 FROM gnn.graphs g WHERE g.name = l.graph AND g.owner = l.owner)});
		bad("change log: $orphans rows of graphs that are not loaded: " . join(', ', map { $_->[0] } @$o));
	}
	# no job left running
	my $running = one('admin', "SELECT count(*) FROM gnn.jobs WHERE state IN ('queued', 'running')");
	bad("jobs: $running left running") if $running;
	# the server log: no crash, no internal error
	my $log = slurp_file($node->logfile, $log_pos);
	$log_pos += length($log);
	for my $bad ('XX000', 'terminated by signal', 'PANIC', 'TRAP', 'server process .* was terminated')
	{
		bad("server log: $bad: " . ($log =~ /(.*$bad.*)/ ? $1 : '')) if $log =~ /$bad/;
	}
}

# ---------------------------------------------------------------- the run
my @acts = (
	[ \&act_load, 14 ], [ \&act_drop, 6 ], [ \&act_track, 6 ], [ \&act_dml, 18 ], [ \&act_ddl, 6 ],
	[ \&act_refresh, 12 ], [ \&act_begin, 9 ], [ \&act_end, 9 ], [ \&act_hostile, 5 ], [ \&act_train, 1.2 ],
	[ \&act_terminate_session, 0.5 ]);
my $total = 0;
$total += $_->[1] for @acts;
my $t0 = time;
for ($step = 1; $step <= $steps; $step++)
{
	if (rand() < 0.004)
	{
		act_restart();
	}
	else
	{
		my $r = pick(@roles);
		my $x = rand($total);
		for my $a (@acts)
		{
			if (($x -= $a->[1]) < 0)
			{
				# an aborted transaction takes only ROLLBACK until it ends
				if (in_txn($r) && $txn{$r}[-1]{__aborted} && $a->[0] != \&act_end)
				{
					act_end($r);
				}
				else
				{
					$a->[0]->($r);
				}
				last;
			}
		}
	}
	invariants();
	last if $failures;
}
# end every transaction and check the end state once more
for my $r (@roles)
{
	if (in_txn($r)) { run($r, 'ROLLBACK'); $txn{$r} = undef; $sp{$r} = []; }
}
invariants();
is($failures, 0, sprintf('%d steps, %.0f s; %s', $step - 1, time - $t0,
		join(', ', map { "$_ $count{$_}" } sort keys %count)));
$_->disconnect for values %dbh;
$admin->disconnect;
$node->stop;
done_testing();
