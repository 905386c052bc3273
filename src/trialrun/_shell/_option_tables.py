"""The option tables of the programs whose options the matcher compares by meaning: pure data, read by `_options`.

Each table says what the program's own option parser accepts, so that a spelling the program takes for an option
is the option: short letters that take a value; every long option (needed whole, because GNU `getopt_long` and
git's parse-options accept any unambiguous prefix, `rm --rec`, `git clean --fo`, and a prefix is only unambiguous
against the whole list); which options imply another (`rsync --del`, `--delete-after` and `--delete-excluded` all
delete what the source lacks, as `--delete` does; `git branch -D` is `--delete --force`); and whether the parser
accepts abbreviations at all (rsync's popt does not: `rsync --delet` is an error, nothing runs).

Written from each program's `--help` (`git CMD -h`) at the versions on the test machine (coreutils 9.1, GNU tar 1.34,
rsync 3.2.7, git 2.39, GNU findutils 4.9); tests/test_shell_options.py checks every table against the installed
program's own list, so a long option the table lacks (which would make a prefix look unambiguous when it is not,
or the other way round) fails there.

A table is a dict of strings:
- "values": the short letters that take a value (`-S SUFFIX`, `-SSUFFIX`); "optional": letters whose value may only
  be attached (`-i{}`);
- "longs": the long options, space-separated: `name` (a flag), `name=x` (the same option as `-x`), `name:` (takes a
  value, `--name V` or `--name=V`), `name::` (its value may only be attached, `--backup=numbered`);
- "short": short letters that are another letter (`R=r`: `rm -R` is `rm -r`);
- "implies": `KEY>KEY,KEY` entries (the option sets the others as well: `--del>--delete`) and `KEY=KEY,KEY`
  entries (the option is a shorthand for the others: `D=d,f`), keys as the table names them;
- "abbreviate": "no" where the parser takes no prefixes; "single_dash": "yes" where one dash starts a long option
  (`find -delete`).
A program with subcommands (git) has a table for its own options under its name and one per subcommand under
"PROGRAM SUBCOMMAND"; "PROGRAM *" is the table of a subcommand not listed.
"""

from __future__ import annotations

__all__ = ["TABLES"]

_RM = {
    "short": "R=r",
    "longs": "force=f interactive:: one-file-system no-preserve-root preserve-root:: recursive=r dir=d verbose=v "
             "help version",
}
_CP = {
    "values": "St",
    "short": "R=r",
    "longs": "archive=a attributes-only backup:: copy-contents force=f interactive=i link=l dereference=L "
             "no-clobber=n no-dereference=P preserve:: no-preserve: parents recursive=r reflink:: remove-destination "
             "sparse: strip-trailing-slashes symbolic-link=s suffix=S target-directory=t no-target-directory=T "
             "update=u verbose=v one-file-system=x context:: help version",
}
_MV = {
    "values": "St",
    "longs": "backup:: force=f interactive=i no-clobber=n strip-trailing-slashes suffix=S target-directory=t "
             "no-target-directory=T update=u verbose=v context=Z help version",
}
_SHRED = {
    "values": "ns",
    # `--remove[=HOW]` is `-u` with a say in how the name is removed
    "longs": "force=f iterations=n random-source: size=s remove=u verbose=v exact=x zero=z help version",
}
_TRUNCATE = {"values": "rs", "longs": "no-create=c io-blocks=o reference=r size=s help version"}
_UNLINK = {"longs": "help version"}
_RMDIR = {"longs": "ignore-fail-on-non-empty parents=p verbose=v help version"}
_LN = {
    "values": "St",
    "longs": "backup:: directory=F force=f interactive=i logical=L no-dereference=n physical=P relative=r "
             "symbolic=s suffix=S target-directory=t no-target-directory=T verbose=v help version",
}
_INSTALL = {
    "values": "Sgmot",
    "longs": "backup:: compare=C directory=d group=g mode=m owner=o preserve-timestamps=p strip=s strip-program: "
             "suffix=S target-directory=t no-target-directory=T verbose=v preserve-context context:: help version",
}
_CHMOD = {
    "longs": "changes=c silent=f quiet=f verbose=v no-preserve-root preserve-root reference: recursive=R help version",
}
_CHOWN = {
    "longs": "changes=c silent=f quiet=f verbose=v dereference no-dereference=h from: no-preserve-root preserve-root "
             "reference: recursive=R help version",
}
_TAR = {
    "values": "CFHIKLNTVXbfg",
    "longs": "catenate=A concatenate=A create=c delete diff=d compare=d append=r test-label list=t update=u "
             "extract=x get=x check-device listed-incremental=g incremental=G hole-detection: ignore-failed-read "
             "level: no-check-device no-seek seek=n occurrence:: sparse-version: sparse=S add-file: directory=C "
             "exclude: exclude-backups exclude-caches exclude-caches-all exclude-caches-under exclude-ignore: "
             "exclude-ignore-recursive: exclude-tag: exclude-tag-all: exclude-tag-under: exclude-vcs "
             "exclude-vcs-ignores no-null no-recursion no-unquote no-verbatim-files-from null verbatim-files-from "
             "recursion files-from=T unquote exclude-from=X anchored ignore-case no-anchored no-ignore-case "
             "no-wildcards no-wildcards-match-slash wildcards wildcards-match-slash keep-directory-symlink "
             "keep-newer-files keep-old-files=k no-overwrite-dir one-top-level:: overwrite overwrite-dir "
             "recursive-unlink remove-files skip-old-files unlink-first=U verify=W ignore-command-error "
             "no-ignore-command-error to-stdout=O to-command: atime-preserve:: clamp-mtime delay-directory-restore "
             "group: group-map: mode: mtime: touch=m no-delay-directory-restore no-same-owner no-same-permissions "
             "numeric-owner owner: owner-map: preserve-permissions=p same-permissions=p same-owner sort: "
             "preserve-order=s same-order=s acls no-acls no-selinux no-xattrs selinux xattrs xattrs-exclude: "
             "xattrs-include: force-local file=f info-script=F new-volume-script=F tape-length=L multi-volume=M "
             "rmt-command: rsh-command: volno-file: blocking-factor=b read-full-records=B ignore-zeros=i "
             "record-size: format=H old-archive portability pax-option: posix label=V auto-compress=a "
             "use-compress-program=I bzip2=j xz=J lzip lzma lzop no-auto-compress zstd gzip=z gunzip=z ungzip=z "
             "compress=Z uncompress=Z backup:: hard-dereference dereference=h starting-file=K newer-mtime: newer=N "
             "after-date=N one-file-system absolute-names=P suffix: strip-components: transform: xform: "
             "checkpoint:: checkpoint-action: full-time index-file: check-links=l no-quote-chars: quote-chars: "
             "quoting-style: block-number=R show-defaults show-omitted-dirs show-snapshot-field-ranges "
             "show-transformed-names show-stored-names totals:: utc verbose=v warning: interactive=w "
             "confirmation=w help restrict usage version",
}
_RSYNC = {
    "values": "BeTfM@",
    "abbreviate": "no",  # popt: `--delet` is "unknown option", and rsync runs nothing
    "longs": "verbose=v info: debug: stderr: quiet=q no-motd checksum=c archive=a recursive=r relative=R "
             "no-implied-dirs backup=b backup-dir: suffix: update=u inplace append append-verify dirs=d old-dirs "
             "old-d mkpath links=l copy-links=L copy-unsafe-links safe-links munge-links copy-dirlinks=k "
             "keep-dirlinks=K hard-links=H perms=p executability=E chmod: acls=A xattrs=X owner=o group=g devices "
             "copy-devices write-devices specials times=t atimes=U open-noatime crtimes=N omit-dir-times=O "
             "omit-link-times=J super fake-super sparse=S preallocate dry-run=n whole-file=W checksum-choice: "
             "one-file-system=x block-size=B rsh=e rsync-path: existing ignore-existing remove-source-files del "
             "delete delete-before delete-during delete-delay delete-after delete-excluded ignore-missing-args "
             "delete-missing-args ignore-errors force max-delete: max-size: min-size: max-alloc: partial "
             "partial-dir: delay-updates prune-empty-dirs=m numeric-ids usermap: groupmap: chown: timeout: "
             "contimeout: ignore-times=I size-only modify-window=@ temp-dir=T fuzzy=y compare-dest: copy-dest: link-dest: "
             "compress=z compress-choice: "
             "compress-level: skip-compress: cvs-exclude=C filter=f exclude: exclude-from: include: include-from: "
             "files-from: from0=0 old-args secluded-args=s trust-sender copy-as: address: port: sockopts: "
             "blocking-io outbuf: stats 8-bit-output=8 human-readable=h progress itemize-changes=i remote-option=M "
             "out-format: log-file: log-file-format: password-file: early-input: list-only bwlimit: stop-after: "
             "stop-at: fsync write-batch: only-write-batch: read-batch: protocol: iconv: checksum-seed: ipv4=4 "
             "ipv6=6 version=V help",
    # each deletes, on the receiving side, what the sending side lacks, as --delete does (3.2.7's manual, and run)
    "implies": "--del>--delete --delete-before>--delete --delete-during>--delete --delete-delay>--delete "
               "--delete-after>--delete --delete-excluded>--delete",
}
# find: one dash, whole words; the tests and actions that take a value take the next word (`-name -delete` is a name)
_FIND = {
    "single_dash": "yes",
    "abbreviate": "no",
    "longs": "name: iname: path: ipath: wholename: iwholename: regex: iregex: lname: ilname: type: xtype: perm: "
             "user: group: uid: gid: size: links: inum: samefile: newer: anewer: cnewer: used: fstype: context: "
             "mtime: atime: ctime: mmin: amin: cmin: maxdepth: mindepth: regextype: files0-from: fprint: fprint0: "
             "fls: printf: fprintf: newermt: newerat: newerct: newermm: neweraa: newercc: newerBt: newermB: "
             "delete depth prune quit print print0 ls",
}
_CURL = {
    "values": "odHXuAeFTxmwbcKrCEDUQPYyz",
    "longs": "output=o remote-name=O silent=s show-error=S location=L fail=f insecure=k data=d header=H request=X "
             "user=u user-agent=A referer=e form=F upload-file=T proxy=x max-time=m write-out=w cookie=b "
             "cookie-jar=c config=K range=r continue-at=C cert=E dump-header=D verbose=v include=i head=I compressed "
             "create-dirs fail-with-body data-binary: data-raw: data-urlencode: url: output-dir: proto: retry: "
             "connect-timeout: json:",
}
_WGET = {
    "values": "OoaPUtTeiBwQlARDIX",
    "longs": "output-document=O output-file=o append-output=a quiet=q directory-prefix=P user-agent=U tries=t "
             "timeout=T continue=c recursive=r level=l input-file=i no-verbose no-check-certificate",
}

# git: its own options (no prefixes: git.c compares them whole), then each subcommand's (parse-options: prefixes)
_GIT = {
    "values": "Cc",
    "abbreviate": "no",
    "longs": "git-dir: work-tree: namespace: super-prefix: config-env: exec-path:: html-path man-path info-path "
             "paginate=p no-pager=P no-replace-objects bare literal-pathspecs glob-pathspecs noglob-pathspecs "
             "icase-pathspecs no-optional-locks list-cmds: version=v help=h",
}
_GIT_SUBCOMMANDS = {
    "clean": {"values": "e", "longs": "quiet=q dry-run=n force=f interactive=i exclude=e"},
    "rm": {"longs": "dry-run=n quiet=q cached force=f ignore-unmatch sparse pathspec-from-file: pathspec-file-nul"},
    "push": {
        "values": "o",
        "longs": "verbose=v quiet=q repo: all mirror delete=d tags dry-run=n porcelain force=f force-with-lease:: "
                 "force-if-includes recurse-submodules: thin receive-pack: exec: set-upstream=u progress prune "
                 "no-verify follow-tags signed:: atomic push-option=o ipv4=4 ipv6=6 no-force-with-lease",
    },
    "reset": {"longs": "quiet=q no-refresh mixed soft hard merge keep recurse-submodules:: patch=p intent-to-add=N "
                       "pathspec-from-file: pathspec-file-nul"},
    "checkout": {
        "values": "Bb",
        "longs": "guess overlay quiet=q recurse-submodules:: progress merge=m conflict: detach=d track:: force=f "
                 "orphan: overwrite-ignore ignore-other-worktrees ours=2 theirs=3 patch=p ignore-skip-worktree-bits "
                 "pathspec-from-file: pathspec-file-nul",
    },
    "restore": {
        "values": "s",
        "longs": "source=s staged=S worktree=W ignore-unmerged overlay quiet=q recurse-submodules:: progress "
                 "merge=m conflict: ours=2 theirs=3 patch=p ignore-skip-worktree-bits pathspec-from-file: "
                 "pathspec-file-nul",
    },
    "switch": {
        "values": "Cc",
        "longs": "create=c force-create=C guess discard-changes quiet=q recurse-submodules:: progress merge=m "
                 "conflict: detach=d track:: force=f orphan: overwrite-ignore ignore-other-worktrees",
    },
    "branch": {
        "values": "u",
        "longs": "verbose=v quiet=q track:: set-upstream-to=u unset-upstream color:: remotes=r contains: "
                 "no-contains: abbrev:: all=a delete=d move=m copy=c list=l show-current create-reflog "
                 "edit-description force=f merged: no-merged: column:: sort: points-at: ignore-case=i "
                 "recurse-submodules format:",
        "implies": "D=d,f M=m,f C=c,f",
    },
    # any other subcommand: the options most of them share (prefixes read against these only)
    "*": {
        "values": "o",
        "longs": "force=f force-with-lease:: force-if-includes delete=d dry-run=n set-upstream=u verbose=v "
                 "quiet=q all tags mirror follow-tags no-verify atomic prune push-option=o",
    },
}

TABLES: dict[str, dict[str, str]] = {
    "rm": _RM, "cp": _CP, "mv": _MV, "shred": _SHRED, "truncate": _TRUNCATE, "unlink": _UNLINK, "rmdir": _RMDIR,
    "ln": _LN, "install": _INSTALL, "chmod": _CHMOD, "chown": _CHOWN, "chgrp": _CHOWN, "tar": _TAR,
    "rsync": _RSYNC, "find": _FIND, "curl": _CURL, "wget": _WGET, "git": _GIT,
    **{f"git {name}": table for name, table in _GIT_SUBCOMMANDS.items()},
}
