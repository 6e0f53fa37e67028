package io.fencelock;

/** Why a lock was lost ({@code fl_lost_reason}). */
public enum LostReason {
    /** Not lost: held, released while held, or detached. */
    NONE,
    /** Its validity ran out without a successful extension, or its key was found gone. */
    EXPIRED,
    /** Another token holds the key: someone acquired it after it expired, or overwrote it. */
    TAKEN,
    /** No quorum of servers could be reached to extend it before its validity ran out. */
    UNREACHABLE;

    static LostReason of(int reason) {
        LostReason[] all = values();
        return reason >= 0 && reason < all.length ? all[reason] : EXPIRED;
    }
}
