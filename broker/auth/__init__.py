"""Authorization: Kafka's AclAuthorizer semantics over ACLs kept in ZooKeeper.

- :mod:`.acl_cache`    the ACLs this broker knows, indexed so that a check is a few
  dictionary lookups (literal by type and name, prefixed by type and prefix length)
- :mod:`.authorizer`   the decision: super users, deny beats allow, implied operations,
  hosts, ``allow.everyone.if.no.acl.found``; the settings from the broker's config
- :mod:`.acl_watcher`  loads the cache at startup and follows ZooKeeper's change
  notifications (the only part that does I/O)

Values (resource types, operations, bindings, filters) are ``protocol.acls``.
"""
