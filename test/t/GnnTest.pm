=head1 NAME

GnnTest - the set-up the TAP tests of gnn share

=head1 SYNOPSIS

  use FindBin;
  use lib $FindBin::RealBin;
  use GnnTest;                        # strict, warnings, Test::More, PostgreSQL::Test::{Cluster,Utils}

  my $node = gnn_node('jobs', conf => "max_worker_processes = 24\ngnn.max_jobs = 3");
  sq('CREATE EXTENSION gnn');
  my ($rc, $out, $err) = as('alice', 'SELECT gnn.degree(...)');

=head1 DESCRIPTION

C<use GnnTest> turns on C<strict> and C<warnings> in the test file and
imports L<Test::More>, L<PostgreSQL::Test::Cluster> and
L<PostgreSQL::Test::Utils> into it, then exports the functions below (all
by default; a file with a local helper of the same name imports a list).

C<gnn_node> makes a node and remembers it as the I<current node>; the
helpers act on it, or on the node given as their last, optional, argument
(for files with several nodes).

=head1 FUNCTIONS

=over

=item gnn_node($name, %opts)

A new L<PostgreSQL::Test::Cluster> named C<$name>, initialised, with
C<shared_preload_libraries = 'gnn'> (C<preload> names another list, say
C<'gnn,pg_cron'>) and the lines of C<conf> appended to postgresql.conf,
started unless C<< start => 0 >> (for a file that edits pg_hba.conf first).
C<init> is a hash of arguments for C<init> (e.g. C<< { allows_streaming => 1 } >>).
It becomes the current node.  Its data directory is a copy of one initdb
made by the run's first node (see C<init_from_template>; not with
C<< init => { extra => [...] } >>).

=item node()

The current node.

=item sq($sql [, $node])

C<safe_psql> on database postgres: the output, or the test dies.

=item try_sql($sql [, $node])

C<psql> on database postgres: ($rc, $stdout, $stderr).

=item as($role, $sql [, $node]) / as_ok($role, $sql [, $node])

C<$sql> after C<SET ROLE $role>: C<as> returns ($rc, $stdout, $stderr),
C<as_ok> the output, dying on an error.

=item wait_for($sql, $expect [, $secs [, $node]])

Runs C<$sql> (C<safe_psql>) every 50 ms until it returns C<$expect> or
C<$secs> (default 60) pass; returns the last value.

=item wait_server([$node])

Waits up to 60 s for the server to accept connections (after a crash
restart); 1 if it does, else 0.

=item dsm_files([$node])

The number of DSM segments of the node: files F<mmap.*> in its
F<pg_dynshmem> (the node must run with C<dynamic_shared_memory_type = mmap>,
so that no other cluster's segments are counted); -1 without the directory.

=item power_cut([$node])

SIGKILL of the postmaster and every child at once, as a power cut would;
returns once they are gone (the caller starts the node again).

=item gnn_data_dir() / gnn_repo()

C<$GNN_DATA_DIR> (the data sets, F<../shared/data>; '' when unset) and
C<$GNN_REPO> (the repository) as test/run_all.sh sets them.

=back

=cut

package GnnTest;

use strict;
use warnings;
use Exporter ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

our @EXPORT = qw(gnn_node node sq try_sql as as_ok wait_for wait_server poll_pause dsm_files power_cut
  gnn_data_dir gnn_repo);

my $current;

sub import
{
	my ($class, @list) = @_;
	my $caller = caller;
	eval "package $caller; use Test::More; use PostgreSQL::Test::Cluster; use PostgreSQL::Test::Utils; 1"
	  or die $@;
	# after the eval, which would undo them: for the file being compiled
	strict->import;
	warnings->import;
	local $Exporter::ExportLevel = 1;
	Exporter::import($class, @list);
}

sub gnn_node
{
	my ($name, %o) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	init_from_template($node, %{ $o{init} // {} });
	my $preload = $o{preload} // 'gnn';
	$node->append_conf('postgresql.conf', "shared_preload_libraries = '$preload'\n" . ($o{conf} // '') . "\n");
	$node->start if $o{start} // 1;
	$current = $node;
	return $node;
}

sub node { return $current; }

# initdb costs 1 to 2 s a node (20 nodes in a run): the first node of a run
# (tmp_check is shared by the files of one prove run) makes a template with
# initdb, the others copy it, as PostgreSQL 16's Cluster.pm does
# (INITDB_TEMPLATE).  Cluster::init does the rest as usual: its initdb call
# alone is replaced by the copy.  GNN_TAP_INITDB=1 turns it off.
sub init_from_template
{
	my ($node, %params) = @_;
	return $node->init(%params) if $params{extra} || $ENV{GNN_TAP_INITDB};
	my $tmpl = "$PostgreSQL::Test::Utils::tmp_check/initdb_template";
	if (!-f "$tmpl/PG_VERSION")
	{
		# made aside and renamed: files run in parallel (prove -j) never see half a template
		my $tmp = "$tmpl.$$";
		PostgreSQL::Test::Utils::system_or_bail('initdb', '-D', $tmp, '-A', 'trust', '-N');
		rename($tmp, $tmpl) or PostgreSQL::Test::Utils::system_or_bail('rm', '-rf', $tmp);
	}
	my $initdb = \&PostgreSQL::Test::Utils::system_or_bail;
	no warnings 'redefine';
	local *PostgreSQL::Test::Utils::system_or_bail = sub {
		return $initdb->(@_) unless $_[0] eq 'initdb' && $_[1] eq '-D';
		return $initdb->('cp', '-RPp', $tmpl, $_[2]);
	};
	return $node->init(%params);
}

sub sq
{
	my ($sql, $node) = @_;
	return ($node // $current)->safe_psql('postgres', $sql);
}

sub try_sql
{
	my ($sql, $node) = @_;
	my ($rc, $out, $err) = ($node // $current)->psql('postgres', $sql);
	return ($rc, $out, $err);
}

sub as
{
	my ($role, $sql, $node) = @_;
	return try_sql("SET ROLE $role; $sql", $node);
}

sub as_ok
{
	my ($role, $sql, $node) = @_;
	my ($rc, $out, $err) = as($role, $sql, $node);
	die "as $role: $sql: $err" if $rc != 0;
	return $out;
}

# The pause before poll number $i (from 0) of a wait: 20 ms, growing by half
# to 250 ms.  Each poll starts psql and a backend, about 20 ms of CPU here, so
# polling every 50 ms through a long wait kept a core busy beside the tests.
sub poll_pause
{
	my ($i) = @_;
	my $s = 0.02 * 1.5**($i > 20 ? 20 : $i);
	Time::HiRes::usleep(int(1e6 * ($s < 0.25 ? $s : 0.25)));
}

sub wait_for
{
	my ($sql, $expect, $secs, $node) = @_;
	my $end = Time::HiRes::time() + ($secs // 60);
	for (my $i = 0; Time::HiRes::time() < $end; $i++)
	{
		my $v = sq($sql, $node);
		return $v if $v eq $expect;
		poll_pause($i);
	}
	return sq($sql, $node);
}

sub wait_server
{
	my ($node) = @_;
	my $end = Time::HiRes::time() + 60;
	for (my $i = 0; Time::HiRes::time() < $end; $i++)
	{
		# (a psql refused while the server recovers can exit before reading the query on its
		# stdin: IPC::Run then dies with EPIPE, which ended 013 "exited 32" in a fresh-clone run;
		# that is one more "not up yet")
		my $rc = eval { (($node // $current)->psql('postgres', 'SELECT 1'))[0] };
		return 1 if defined $rc && $rc == 0;
		poll_pause($i);
	}
	return 0;
}

sub dsm_files
{
	my ($node) = @_;
	opendir(my $d, ($node // $current)->data_dir . '/pg_dynshmem') or return -1;
	my $n = grep { /^mmap\./ } readdir($d);
	closedir($d);
	return $n;
}

sub power_cut
{
	my ($node) = @_;
	$node //= $current;
	my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	my @kids = split /\s+/, `pgrep -P $pm`;
	kill 'KILL', grep { /^\d+$/ } @kids;
	$node->kill9;
	for (1 .. 100)
	{
		last unless kill(0, $pm) || grep { /^\d+$/ && kill(0, $_) } @kids;
		Time::HiRes::usleep(100_000);
	}
	return;
}

sub gnn_data_dir { return $ENV{GNN_DATA_DIR} // ''; }
sub gnn_repo { return $ENV{GNN_REPO} // ''; }

1;
