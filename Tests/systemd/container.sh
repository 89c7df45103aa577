# Boots a Debian 12 root under systemd-nspawn and runs commands inside it. Sourced by
# Tests/systemd/run. These nspawn flags are the ones that work on a host whose PID 1 is not
# systemd (a CI container): no machined registration, no scope unit of its own, no network
# beyond the container's own loopback, and every write to the root kept in a tmpfs overlay, so
# the cached root stays clean and each run starts from the same state.

container_pid=
container_leader=
container_log=

# container_boot ROOT PACKAGE_DIR: boots ROOT with PACKAGE_DIR bound read-only at /mnt/package
# and waits until the container's systemd reports the system running.
container_boot() {
    local root=$1 packages=$2
    container_log=$(mktemp)
    systemd-nspawn --quiet --boot --register=no --keep-unit --private-network --volatile=overlay \
        --machine="fleet-test-$$" --directory="$root" --bind-ro="$packages:/mnt/package" \
        >"$container_log" 2>&1 &
    container_pid=$!
    local deadline=$((SECONDS + 30))
    while [[ -z "$container_leader" ]]; do
        if ! kill -0 "$container_pid" 2>/dev/null; then
            echo "systemd-nspawn exited at once; this host cannot boot a container:" >&2
            cat "$container_log" >&2
            return 1
        fi
        ((SECONDS < deadline)) || { echo "systemd-nspawn started no init within 30 s" >&2; return 1; }
        container_leader=$(pgrep -P "$container_pid" | head -1 || true)
        [[ -n "$container_leader" ]] || sleep 0.1
    done
    # The leader is there before its systemd has set up /run/systemd; wait for the manager.
    local state=
    while ((SECONDS < deadline)); do
        state=$(in_container systemctl is-system-running 2>/dev/null || true)
        [[ "$state" == running || "$state" == degraded ]] && break
        sleep 0.2
    done
    case "$state" in
        running) ;;
        degraded)  # a unit this host cannot run inside a container; not the service's business
            echo "# the container booted degraded:" >&2
            in_container systemctl --failed --no-pager --plain --no-legend | sed 's/^/#   /' >&2 || true ;;
        *)
            echo "the container's systemd is '$state', not running:" >&2
            in_container systemctl --failed --no-pager >&2 || true
            tail -20 "$container_log" >&2
            return 1 ;;
    esac
}

# Powers the container off (its systemd stops every unit), killing it if that takes over 20 s.
container_stop() {
    [[ -n "$container_pid" ]] || return 0
    kill -TERM "$container_pid" 2>/dev/null || true
    local deadline=$((SECONDS + 20))
    while kill -0 "$container_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -KILL "$container_pid" 2>/dev/null || true
    wait "$container_pid" 2>/dev/null || true
    container_pid=
    rm -f "$container_log"
}

# in_container COMMAND...: runs COMMAND in all of the container's namespaces, with a clean
# environment, as root.
in_container() {
    nsenter --target "$container_leader" --mount --uts --ipc --net --pid --cgroup --root --wd -- \
        /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
