"""The web console's integration tests. A package (unlike the other test directories) so
that its ``scope="package"`` fixtures -- one cluster and one console shared by these
modules -- are torn down when its last module ends: in a plain directory pytest keeps
them until the end of the session."""
